// Package texttable prints tables for people: in the default format within
// 120 columns (wide columns left out, notes under their row, long cells
// wrapped within their column), and with every column on one line for
// -o wide. The CLI and the demo print their tables with it.
package texttable

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxWidth is the widest line a default table prints; -o wide has no limit.
const MaxWidth = 120

// colKind says where a column's cells go in the default format.
type colKind int

const (
	// colMain cells are aligned on the row's line in every format.
	colMain colKind = iota
	// colWide cells appear only with -o wide.
	colWide
	// colNote cells are aligned on the row's line with -o wide and, in the
	// default format, printed under the row as "name: text", wrapped.
	colNote
)

// Column is a column of a Table.
type Column struct {
	name string
	kind colKind
}

// Table is a header and rows. In the default format it keeps to MaxWidth
// columns: wide columns are left out, note columns go under their row,
// wrapped, and if the main columns are still too wide the widest of them
// wraps within its column. With -o wide every column is on the row's line.
type Table struct {
	cols []Column
	rows [][]string
}

// New returns an empty table with cols.
func New(cols ...Column) *Table { return &Table{cols: cols} }

// Main is a column on the row's line in every format.
func Main(name string) Column { return Column{name: name} }

// Wide is a column shown only with -o wide.
func Wide(name string) Column { return Column{name: name, kind: colWide} }

// Note is a column printed under its row by default, on the row with -o wide.
func Note(name string) Column { return Column{name: name, kind: colNote} }

// Add appends a row; an empty cell prints as "-".
func (t *Table) Add(cells ...string) {
	row := make([]string, len(t.cols))
	for i := range row {
		if i < len(cells) && cells[i] != "" {
			row[i] = strings.Join(strings.Fields(cells[i]), " ")
		} else {
			row[i] = "-"
		}
	}
	t.rows = append(t.rows, row)
}

// Write prints the table, every column on its row with wide, else within
// MaxWidth.
func (t *Table) Write(w io.Writer, wide bool) {
	if len(t.rows) == 0 {
		return
	}
	var shown, notes []int
	for i, c := range t.cols {
		switch {
		case wide || c.kind == colMain:
			shown = append(shown, i)
		case c.kind == colNote:
			notes = append(notes, i)
		}
	}
	widths := t.widths(shown)
	if !wide {
		t.fitWidths(shown, widths)
	}
	header := make([]string, len(t.cols))
	for i, c := range t.cols {
		header[i] = c.name
	}
	writeAligned(w, header, shown, widths)
	for _, row := range t.rows {
		writeAligned(w, row, shown, widths)
		for _, i := range notes {
			if row[i] == "-" {
				continue
			}
			for _, line := range Wrap(strings.ToLower(t.cols[i].name)+": "+row[i], MaxWidth-4) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
}

// widths is the widest cell of each shown column, header included.
func (t *Table) widths(shown []int) []int {
	widths := make([]int, len(shown))
	for j, i := range shown {
		widths[j] = utf8.RuneCountInString(t.cols[i].name)
		for _, row := range t.rows {
			widths[j] = max(widths[j], utf8.RuneCountInString(row[i]))
		}
	}
	return widths
}

// fitWidths narrows columns until a line fits MaxWidth with two spaces
// between columns: each step takes from the column with the most room
// above its longest word (so no word is cut), and the cells of a
// narrowed column wrap. When no column has room left the line stays
// wider.
func (t *Table) fitWidths(shown, widths []int) {
	floor := make([]int, len(shown))
	for j, i := range shown {
		floor[j] = utf8.RuneCountInString(t.cols[i].name)
		for _, row := range t.rows {
			floor[j] = max(floor[j], longestPiece(row[i]))
		}
	}
	total := 2 * (len(widths) - 1)
	for _, n := range widths {
		total += n
	}
	for total > MaxWidth {
		best := -1
		for j := range widths {
			if widths[j] > floor[j] && (best < 0 || widths[j]-floor[j] > widths[best]-floor[best]) {
				best = j
			}
		}
		if best < 0 {
			return
		}
		cut := min(total-MaxWidth, widths[best]-floor[best])
		widths[best] -= cut
		total -= cut
	}
}

// writeAligned prints the shown cells of row padded to their widths; a
// cell wider than its column wraps onto the next lines of that column.
func writeAligned(w io.Writer, row []string, shown, widths []int) {
	pieces := make([][]string, len(shown))
	lines := 1
	for j, i := range shown {
		pieces[j] = []string{row[i]}
		if utf8.RuneCountInString(row[i]) > widths[j] {
			pieces[j] = Wrap(row[i], widths[j])
		}
		lines = max(lines, len(pieces[j]))
	}
	for k := range lines {
		var b strings.Builder
		for j := range shown {
			cell := ""
			if k < len(pieces[j]) {
				cell = pieces[j][k]
			}
			b.WriteString(cell)
			if j < len(shown)-1 {
				b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(cell)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// Wrap breaks s into lines of at most n runes at spaces, and a word
// longer than n after its commas (a list such as VM.Audit,VM.Clone). A
// piece still longer than n (a URL, a path) is never cut: it gets a line
// of its own.
func Wrap(s string, n int) []string {
	var lines []string
	line := ""
	add := func(piece string, sep string) {
		switch {
		case line == "":
			line = piece
		case utf8.RuneCountInString(line)+len(sep)+utf8.RuneCountInString(piece) <= n:
			line += sep + piece
		default:
			lines, line = append(lines, line), piece
		}
	}
	for _, word := range strings.Fields(s) {
		if utf8.RuneCountInString(word) <= n || !strings.Contains(word, ",") {
			add(word, " ")
			continue
		}
		sep := " " // the word's first piece follows a space, the rest its comma
		for _, piece := range commaPieces(word) {
			add(piece, sep)
			sep = ""
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// commaPieces splits a word after each comma, the commas kept.
func commaPieces(word string) []string {
	pieces := strings.SplitAfter(word, ",")
	if pieces[len(pieces)-1] == "" {
		pieces = pieces[:len(pieces)-1]
	}
	return pieces
}

// longestPiece is the longest part of s that Wrap never breaks.
func longestPiece(s string) int {
	n := 0
	for _, word := range strings.Fields(s) {
		for _, piece := range commaPieces(word) {
			n = max(n, utf8.RuneCountInString(piece))
		}
	}
	return n
}
