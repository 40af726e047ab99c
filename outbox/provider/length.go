package provider

import (
	"regexp"
	"strings"
	"unicode"
)

// linkRE is a link as Mastodon (through twitter-text) recognises one to
// count it short: an http(s) URL at the start of a word, whose host ends
// in a top-level domain, with the path characters twitter-text accepts
// (an ASCII subset of them, so the match is never longer than its own).
var linkRE = regexp.MustCompile(`(?i)(^|[^a-z0-9@$#])(https?://(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+([a-z]{2,})(?::[0-9]+)?(?:[/?#][a-z0-9!*';:=+,.$/%#\[\]_~&|@?-]*)?)`)

// knownTLDs are the top-level domains of more than two letters a link may
// end its host in to be counted short; any two-letter one (a country's)
// is too. A link under another (.example, .internal, .corp) may not be
// recognised, so it is counted whole.
var knownTLDs = map[string]bool{
	"com": true, "org": true, "net": true, "edu": true, "gov": true, "mil": true, "int": true, "info": true, "biz": true,
	"name": true, "pro": true, "app": true, "dev": true, "xyz": true, "site": true, "online": true, "tech": true,
	"blog": true, "wiki": true, "social": true, "cloud": true, "page": true, "news": true, "art": true, "club": true,
	"shop": true, "store": true, "live": true, "space": true, "website": true, "email": true, "network": true,
	"systems": true, "software": true, "zone": true, "host": true, "digital": true, "media": true, "works": true,
}

// LinkedLength is the length of text as a server that counts each link as
// urlChars characters and each grapheme cluster as one (Mastodon's status
// limit) counts it, or more, never less: a link it might not recognise is
// counted whole, a link's trailing punctuation apart, and a cluster this
// does not know to join is counted rune by rune.
func LinkedLength(text string, urlChars int) int {
	n, last := 0, 0
	for _, m := range linkRE.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[4], m[5]
		link := text[start:end]
		// twitter-text ends a link on a letter, a digit or one of = _ # / -.
		trimmed := strings.TrimRightFunc(link, func(r rune) bool {
			return !(r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("=_#/-", r)))
		})
		tld := strings.ToLower(text[m[6]:m[7]])
		if len(tld) != 2 && !knownTLDs[tld] || start+len(trimmed) < m[7] {
			continue
		}
		n += graphemes(text[last:start]) + urlChars
		last = start + len(trimmed)
	}
	return n + graphemes(text[last:])
}

// graphemes counts the grapheme clusters of s, or more: it joins to the
// character before it only what always joins (combining marks, variation
// selectors, emoji modifiers, a zero-width joiner and the pictograph it
// joins to a pictograph, the second of a pair of regional indicators).
func graphemes(s string) int {
	n := 0
	var prev, base rune
	ri := false // prev is a regional indicator that began a cluster
	for _, r := range s {
		switch {
		case n > 0 && (unicode.In(r, unicode.Mn, unicode.Me) || r >= 0xFE00 && r <= 0xFE0F || r >= 0x1F3FB && r <= 0x1F3FF || r == 0x200D):
		case n > 0 && prev == 0x200D && pictograph(base) && pictograph(r):
			base = r
		case n > 0 && ri && r >= 0x1F1E6 && r <= 0x1F1FF:
			ri = false
		default:
			n++
			base = r
			ri = r >= 0x1F1E6 && r <= 0x1F1FF
		}
		prev = r
	}
	return n
}

func pictograph(r rune) bool { return r >= 0x1F300 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF }
