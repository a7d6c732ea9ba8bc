package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteHTML(t *testing.T) {
	dir := t.TempDir()
	md := strings.Join([]string{
		"### peer-x: a <title>", "",
		"Some `code <x>` and **bold**, a [link](results/peer-x/a.json).", "",
		"| cell | msgs/s |", "|---|--:|", "| samsa | 1,000 |", "| nats | 500 |", "",
		"- one", "- two", "",
		"![peer-x: throughput](results/peer-x/peer-x-throughput.svg)", "",
		"```", "make bench", "```",
	}, "\n")
	page := filepath.Join(dir, "results", "peer-x", "run.html")
	require.NoError(t, os.MkdirAll(filepath.Dir(page), 0o755))
	require.NoError(t, WriteHTML(page, "peer-x", md, dir))
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	got := string(b)
	for _, s := range []string{
		"<h3>peer-x: a &lt;title&gt;</h3>",
		"<code>code &lt;x&gt;</code>", "<strong>bold</strong>", `<a href="a.json">link</a>`,
		"<tr><th>cell</th><th>msgs/s</th></tr>", "<tr><td>samsa</td><td>1,000</td></tr>",
		"<li>two</li>", `<img src="peer-x-throughput.svg" alt="peer-x: throughput">`,
		"<pre>make bench\n</pre>",
	} {
		require.Contains(t, got, s)
	}
	require.NotContains(t, got, "<script")
	require.NotContains(t, got, "|---|")
	require.Equal(t, "x/y.html", HTMLPath("x/y.json"))
}
