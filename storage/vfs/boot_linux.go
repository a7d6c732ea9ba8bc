package vfs

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

var osBoot struct {
	once sync.Once
	id   string
	err  error
}

// BootID is the kernel's boot_id (a random UUID made at each boot).
func (osFS) BootID() (string, error) {
	osBoot.once.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			osBoot.err = fmt.Errorf("vfs: boot id: %w", err)
			return
		}
		osBoot.id = strings.TrimSpace(string(b))
	})
	return osBoot.id, osBoot.err
}
