package content

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// EditText applies an edit of a rich-text value's plain text (its Flatten
// form, which a text box shows) to the stored value, and keeps what plain
// text cannot show wherever the edit did not reach:
//
//   - text equal to the value's own, but for surrounding white space, gives
//     back the stored value itself;
//   - a paragraph whose text is unchanged keeps its block as stored (_key,
//     style, markDefs, its spans' marks and any other key);
//   - an edited paragraph keeps its block's keys, and the text before and
//     after the edit stays in the spans that held it, with their marks.
//     Text typed in joins the span the edit starts in (at a boundary between
//     two spans, the later one; at the end, the last). A span the edit
//     empties is removed, and so is a markDefs entry no span refers to any
//     more (the link whose text was deleted);
//   - a new paragraph is a plain block; a removed paragraph's block goes.
//
// Paragraphs are paired by their text, so adding or removing one leaves the
// others as they were. Empty text is no blocks. A stored value that is not
// rich text is an error: nothing is overwritten that could not be read.
func EditText(stored json.RawMessage, text string) (json.RawMessage, error) {
	blocks, err := ParseRichText(stored)
	if err != nil {
		return nil, err
	}
	if len(blocks) > 0 && strings.TrimSpace(text) == strings.TrimSpace(Flatten(blocks)) {
		return stored, nil
	}
	if text == "" {
		return json.RawMessage("[]"), nil
	}
	var raw []json.RawMessage
	if len(blocks) > 0 {
		if err := json.Unmarshal(stored, &raw); err != nil {
			return nil, valueErr(RichText, stored, "not a block array: %v", err)
		}
	}
	olds := make([]string, len(blocks))
	for i, b := range blocks {
		olds[i] = Flatten([]Block{b})
	}
	paras := strings.Split(text, paragraphSep)
	out := make([]json.RawMessage, len(paras))
	for j, m := range pairParagraphs(olds, paras) {
		switch {
		case m.old < 0:
			out[j], err = json.Marshal(Wrap(paras[j])[0])
		case m.same:
			out[j] = raw[m.old]
		default:
			out[j], err = editBlock(raw[m.old], blocks[m.old], paras[j])
		}
		if err != nil {
			return nil, err
		}
	}
	return json.Marshal(out)
}

// pairing is the old block a new paragraph comes from: old is -1 for a new
// paragraph, and same says its text did not change.
type pairing struct {
	old  int
	same bool
}

// maxPairCells bounds the table that pairs paragraphs by their longest
// common subsequence; past it, the paragraphs between the unchanged head
// and tail are paired by position.
const maxPairCells = 1 << 20

// pairParagraphs pairs each new paragraph with an old one: equal text
// along a longest common subsequence, and in each gap between two such
// pairs, the gap's old and new paragraphs in order.
func pairParagraphs(olds, news []string) []pairing {
	out := make([]pairing, len(news))
	var matches [][2]int // (old, new), increasing in both
	head := 0
	for head < len(olds) && head < len(news) && olds[head] == news[head] {
		matches = append(matches, [2]int{head, head})
		head++
	}
	tail := 0
	for tail < len(olds)-head && tail < len(news)-head && olds[len(olds)-1-tail] == news[len(news)-1-tail] {
		tail++
	}
	o, n := olds[head:len(olds)-tail], news[head:len(news)-tail]
	if (len(o)+1)*(len(n)+1) <= maxPairCells {
		// lcs[i][j] is the LCS length of o[i:] and n[j:].
		lcs := make([][]int, len(o)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(n)+1)
		}
		for i := len(o) - 1; i >= 0; i-- {
			for j := len(n) - 1; j >= 0; j-- {
				if o[i] == n[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		for i, j := 0, 0; i < len(o) && j < len(n); {
			switch {
			case o[i] == n[j]:
				matches = append(matches, [2]int{head + i, head + j})
				i, j = i+1, j+1
			case lcs[i+1][j] >= lcs[i][j+1]:
				i++
			default:
				j++
			}
		}
	}
	for k := 0; k < tail; k++ {
		matches = append(matches, [2]int{len(olds) - tail + k, len(news) - tail + k})
	}
	prevOld, prevNew := -1, -1
	pairGap := func(oldEnd, newEnd int) {
		i := prevOld + 1
		for j := prevNew + 1; j < newEnd; j++ {
			if i < oldEnd {
				out[j] = pairing{old: i}
				i++
			} else {
				out[j] = pairing{old: -1}
			}
		}
	}
	for _, m := range matches {
		pairGap(m[0], m[1])
		out[m[1]] = pairing{old: m[0], same: true}
		prevOld, prevNew = m[0], m[1]
	}
	pairGap(len(olds), len(news))
	return out
}

// editBlock gives the stored block raw (b, parsed) the text para, keeping
// its keys and its spans' marks outside the edited range.
func editBlock(raw json.RawMessage, b Block, para string) (json.RawMessage, error) {
	var block map[string]json.RawMessage
	var spans []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, valueErr(RichText, raw, "not a block: %v", err)
	}
	if err := json.Unmarshal(block["children"], &spans); err != nil {
		return nil, valueErr(RichText, raw, "children must be an array of spans")
	}
	old := Flatten([]Block{b})
	p, e, mid := editRange(old, para)
	anchor := len(b.Children) - 1 // the span typed text joins
	for k, end := 0, 0; k < len(b.Children); k++ {
		if end += len(b.Children[k].Text); end > p {
			anchor = k
			break
		}
	}
	var children []map[string]json.RawMessage
	marks := map[string]bool{}
	for k, start := 0, 0; k < len(b.Children); k++ {
		end := start + len(b.Children[k].Text)
		var t strings.Builder
		if start < p {
			t.WriteString(old[start:min(end, p)])
		}
		if k == anchor {
			t.WriteString(mid)
		}
		if end > e {
			t.WriteString(old[max(start, e):end])
		}
		start = end
		if t.Len() == 0 {
			continue
		}
		sp := spans[k]
		sp["text"], _ = json.Marshal(t.String())
		var ms []string
		if json.Unmarshal(sp["marks"], &ms) == nil {
			for _, m := range ms {
				marks[m] = true
			}
		}
		children = append(children, sp)
	}
	if children == nil { // a block that had no spans
		children = []map[string]json.RawMessage{{"_type": json.RawMessage(`"span"`)}}
		children[0]["text"], _ = json.Marshal(para)
	}
	block["children"], _ = json.Marshal(children)
	var defs []map[string]json.RawMessage
	if json.Unmarshal(block["markDefs"], &defs) == nil && defs != nil {
		kept := []map[string]json.RawMessage{}
		for _, d := range defs {
			var key string
			if json.Unmarshal(d["_key"], &key) != nil || marks[key] {
				kept = append(kept, d)
			}
		}
		block["markDefs"], _ = json.Marshal(kept)
	}
	return json.Marshal(block)
}

// editRange is where new differs from old: old[:p] and old[e:] are kept,
// and mid replaces old[p:e]. Both ends fall on rune boundaries.
func editRange(old, new string) (p, e int, mid string) {
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	for p > 0 && (p < len(old) && !utf8.RuneStart(old[p]) || p < len(new) && !utf8.RuneStart(new[p])) {
		p--
	}
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	for s > 0 && !utf8.RuneStart(old[len(old)-s]) {
		s--
	}
	return p, len(old) - s, new[p : len(new)-s]
}
