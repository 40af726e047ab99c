package web

import "testing"

// safeNext lets a sign-in return only to a path on this site. Browsers
// drop tabs and newlines from a URL and read a backslash as a slash, so
// anything that could become "//host" once they have done so is refused.
func TestSafeNextKeepsTheReturnOnThisSite(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/status/sources/a?x=1", "/status/sources/a?x=1"},
		{"/status", "/status"},
		{"/outbox/lanes/l1#top", "/outbox/lanes/l1#top"},
		{"/%09/evil.example/phish", "/%09/evil.example/phish"}, // still encoded: a path here
		{"", "/status"},
		{"status", "/status"},
		{"https://evil.example/", "/status"},
		{"//evil.example/phish", "/status"},
		{"/\\evil.example/phish", "/status"},
		{"/\t/evil.example/phish", "/status"}, // "/%09/evil.example/phish" decoded
		{"/\n/evil.example/phish", "/status"},
		{"/\r/evil.example/phish", "/status"},
		{"/\r\n/evil.example/phish", "/status"},
		{"/\x00/evil.example", "/status"},
		{"/\x7f/evil.example", "/status"},
		{"/status\\..\\..", "/status"},
		{"/status?\tx", "/status"},
	} {
		if got := safeNext(tc.next); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}
