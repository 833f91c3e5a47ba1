package internal_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/meshbench/meshbench/internal/cli"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = ".."

// mdLink finds Markdown links and images: [text](target) and ![alt](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// docFiles are README.md and every Markdown file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// prose is a Markdown file without its fenced code blocks and inline code
// (links there are examples, not links).
func prose(md string) string {
	var b strings.Builder
	fence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if !fence {
			b.WriteString(regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "") + "\n")
		}
	}
	return b.String()
}

// anchors are the heading anchors GitHub makes for a Markdown file: lower
// case, letters, digits, '-' and '_' kept, spaces to '-', the rest dropped;
// repeats get -1, -2 ….
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#"))) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		for n, base := 1, a; out[a]; n++ {
			a = base + "-" + itoa(n)
		}
		out[a] = true
	}
	return out
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// TestDocLinks: every relative link in README.md and docs/ resolves: the
// file or directory exists in the repository and, with an #anchor into a
// Markdown file, that file has such a heading.
func TestDocLinks(t *testing.T) {
	n := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(prose(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			rel, _ := filepath.Rel(repoRoot, dest)
			if strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %s leaves the repository", f, target)
				continue
			}
			st, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %s: no %s", f, target, rel)
				continue
			}
			if anchor != "" && !st.IsDir() && strings.HasSuffix(dest, ".md") {
				db, _ := os.ReadFile(dest)
				if !anchors(string(db))[anchor] {
					t.Errorf("%s: link %s: %s has no heading #%s", f, target, rel, anchor)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d relative links found: the docs tree is missing or the pattern broke", n)
	}
}

// TestReadmeFrontPage: the README stays a front page: at most 200 lines,
// and it names every command users have (one line each).
func TestReadmeFrontPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 200 {
		t.Errorf("README.md has %d lines; at most 200 (move the rest into docs/)", n)
	}
	for _, c := range cli.ReferenceCommands() {
		if strings.Count(c[0], " ") == 1 && !strings.Contains(string(b), "`"+c[0]) {
			t.Errorf("README.md does not name %s (%s)", c[0], c[1])
		}
	}
}
