package broker

import (
	"fmt"
	"os"
	"testing"
)

// childEnv names the environment variable that turns the test binary into a
// helper process: "official" runs the official client's scenario against
// a broker of the parent (official_test.go), "broker" runs a broker until
// killed (crash_test.go).
const childEnv = "SAMSA_BROKER_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "official":
		if err := officialChild(); err != nil {
			fmt.Fprintln(os.Stderr, "official child:", err)
			os.Exit(1)
		}
		fmt.Println("OK")
		os.Exit(0)
	case "broker":
		if err := brokerChild(); err != nil {
			fmt.Fprintln(os.Stderr, "broker child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, os.Getenv(childEnv))
		os.Exit(2)
	}
}
