package resultfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRelativeTo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"samsa loadgen --dir /w/repo/.benchdata/e2e --out results", "samsa loadgen --dir .benchdata/e2e --out results"},
		{"--dir=/w/repo/.benchdata --last /w/repo/.benchdata/last", "--dir=.benchdata --last .benchdata/last"},
		{"/w/repo", "."},
		{"/w/repo/", "."},
		{"cd /w/repo/ && make", "cd . && make"},
		{"(data and logs kept in /w/repo/.benchdata/chaos/chaos-1)", "(data and logs kept in .benchdata/chaos/chaos-1)"},
		{"storePathRootDir=/w/repo/d/samsa-1, aclFile=/w/repo/d/samsa-1/acl.yml}", "storePathRootDir=d/samsa-1, aclFile=d/samsa-1/acl.yml}"},
		{"/w/repo2/x /x/w/repo/y /tmp/samsa-rabbitmq-1", "/w/repo2/x /x/w/repo/y /tmp/samsa-rabbitmq-1"},
		{"no path at all", "no path at all"},
	} {
		require.Equal(t, tc.want, relativeTo(tc.in, "/w/repo/"), tc.in)
	}
	require.Equal(t, "/a/b", relativeTo("/a/b", "/", "", "rel"), "no root to strip")
}

func TestRelativePathsUsesTheWorkingDirectory(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, "--dir .benchdata/e2e", RelativePaths("--dir "+filepath.Join(wd, ".benchdata", "e2e")))
	require.Equal(t, "/nonexistent-root/x", RelativePaths("/nonexistent-root/x"))
}
