package lab

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// HTMLPath is where a result file's HTML page goes: beside it, .html for
// .json.
func HTMLPath(resultPath string) string {
	return strings.TrimSuffix(resultPath, filepath.Ext(resultPath)) + ".html"
}

// WriteHTML writes one static HTML page (no scripts) for a report
// section: md, the section's Markdown, rendered with its charts, whose
// links are relative to linkBase (the Markdown's directory) and are
// rewritten relative to the page's directory.
func WriteHTML(path, title, md, linkBase string) error {
	dir := filepath.Dir(path)
	relink := func(link string) string {
		if strings.Contains(link, "://") || filepath.IsAbs(link) {
			return link
		}
		if rel, err := filepath.Rel(dir, filepath.Join(linkBase, filepath.FromSlash(link))); err == nil {
			return filepath.ToSlash(rel)
		}
		return link
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head><body>\n",
		html.EscapeString(title), pageStyle)
	b.WriteString(markdownHTML(md, relink))
	b.WriteString("</body></html>\n")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

const pageStyle = `body{font-family:sans-serif;max-width:80em;margin:2em auto;padding:0 1em;line-height:1.4}
table{border-collapse:collapse;margin:1em 0;font-size:90%}th,td{border:1px solid #bbb;padding:.25em .6em;text-align:right}
th{background:#eee}td:first-child,th:first-child{text-align:left}img{max-width:100%;display:block;margin:1em 0}
code{background:#f3f3f3;padding:0 .2em}pre{background:#f3f3f3;padding:.6em;overflow-x:auto}`

var (
	reImage  = regexp.MustCompile(`^!\[([^\]]*)\]\(([^)]+)\)$`)
	reLink   = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	reCode   = regexp.MustCompile("`([^`]+)`")
	reStrong = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	reTSep   = regexp.MustCompile(`^\|?\s*:?-{2,}`)
)

// markdownHTML renders the Markdown the reports write: headings, tables,
// lists, images on a line of their own, fenced code, paragraphs with code
// spans, bold and links. Anything else is escaped text.
func markdownHTML(md string, relink func(string) string) string {
	var out strings.Builder
	lines := strings.Split(md, "\n")
	var para []string
	flush := func() {
		if len(para) > 0 {
			out.WriteString("<p>" + inline(strings.Join(para, " "), relink) + "</p>\n")
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t")
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			flush()
		case strings.HasPrefix(t, "<!--"):
			flush()
		case strings.HasPrefix(t, "```"):
			flush()
			out.WriteString("<pre>")
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				out.WriteString(html.EscapeString(lines[i]) + "\n")
			}
			out.WriteString("</pre>\n")
		case strings.HasPrefix(t, "#"):
			flush()
			n := len(t) - len(strings.TrimLeft(t, "#"))
			n = min(n, 6)
			fmt.Fprintf(&out, "<h%d>%s</h%d>\n", n, inline(strings.TrimSpace(t[n:]), relink), n)
		case reImage.MatchString(t):
			flush()
			m := reImage.FindStringSubmatch(t)
			fmt.Fprintf(&out, "<figure><img src=\"%s\" alt=\"%s\"><figcaption>%s</figcaption></figure>\n",
				html.EscapeString(relink(m[2])), html.EscapeString(m[1]), html.EscapeString(m[1]))
		case strings.HasPrefix(t, "|"):
			flush()
			out.WriteString("<table>\n")
			row := 0
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				cells := splitRow(strings.TrimSpace(lines[i]))
				if row == 1 && reTSep.MatchString(strings.TrimSpace(lines[i])) {
					row++
					continue
				}
				tag := "td"
				if row == 0 {
					tag = "th"
				}
				out.WriteString("<tr>")
				for _, c := range cells {
					fmt.Fprintf(&out, "<%s>%s</%s>", tag, inline(c, relink), tag)
				}
				out.WriteString("</tr>\n")
				row++
			}
			i--
			out.WriteString("</table>\n")
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			flush()
			out.WriteString("<ul>\n")
			for ; i < len(lines); i++ {
				lt := strings.TrimSpace(lines[i])
				if !strings.HasPrefix(lt, "- ") && !strings.HasPrefix(lt, "* ") {
					break
				}
				out.WriteString("<li>" + inline(lt[2:], relink) + "</li>\n")
			}
			i--
			out.WriteString("</ul>\n")
		default:
			para = append(para, t)
		}
	}
	flush()
	return out.String()
}

func splitRow(l string) []string {
	l = strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|")
	parts := strings.Split(l, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// inline escapes s and renders code spans, bold and links.
func inline(s string, relink func(string) string) string {
	// Code spans first, kept away from the other rules.
	var codes []string
	s = reCode.ReplaceAllStringFunc(s, func(m string) string {
		codes = append(codes, "<code>"+html.EscapeString(m[1:len(m)-1])+"</code>")
		return fmt.Sprintf("\x00%d\x00", len(codes)-1)
	})
	s = html.EscapeString(s)
	s = reStrong.ReplaceAllString(s, "<strong>$1</strong>")
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		sm := reLink.FindStringSubmatch(m)
		return fmt.Sprintf("<a href=\"%s\">%s</a>", html.EscapeString(relink(html.UnescapeString(sm[2]))), sm[1])
	})
	for i, c := range codes {
		s = strings.Replace(s, fmt.Sprintf("\x00%d\x00", i), c, 1)
	}
	return s
}
