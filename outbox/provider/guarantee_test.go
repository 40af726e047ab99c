package provider_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider"
)

func TestDeriveGuaranteeFromCapabilities(t *testing.T) {
	listed := provider.Capabilities{
		ListOwn:   &provider.Capability{Needs: []string{"list_url"}},
		Probe:     &provider.Capability{Needs: []string{"probe_url|search_url"}},
		Counter:   &provider.Capability{Needs: []string{"count_url"}},
		Freshness: []string{"Date+Age headers"},
	}
	noAge := listed
	noAge.Freshness = nil
	keyed := provider.Capabilities{IdempotencyKey: &provider.Capability{}, KeyWindow: time.Hour}
	for _, tc := range []struct {
		name     string
		caps     provider.Capabilities
		settings map[string]string
		want     provider.Guarantee
		resend   bool
		missing  []string
	}{
		{"nothing to read", listed, nil, provider.AtMostOnce, false, []string{"list_url", "probe_url|search_url"}},
		{"a counter alone cannot decide a crashed writer's write", listed, map[string]string{"count_url": "x"}, provider.AtMostOnce, false, []string{"list_url", "probe_url|search_url"}},
		{"a listing", listed, map[string]string{"list_url": "x"}, provider.ExactlyOnce, false, nil},
		{"a probe through an alternative", listed, map[string]string{"search_url": "x"}, provider.ExactlyOnce, false, nil},
		{"reads without proof of age decide nothing", noAge, map[string]string{"list_url": "x", "probe_url": "x"}, provider.AtMostOnce, false, []string{}},
		{"opted in", listed, map[string]string{"resend_in_doubt": "true"}, provider.AtLeastOnce, true, nil},
		{"opted out explicitly", listed, map[string]string{"resend_in_doubt": "false"}, provider.AtMostOnce, false, []string{"list_url", "probe_url|search_url"}},
		{"opted in with a listing", listed, map[string]string{"list_url": "x", "resend_in_doubt": "1"}, provider.AtLeastOnce, true, nil},
		{"a key the server honours", keyed, nil, provider.ExactlyOnce, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := provider.Derive(tc.caps, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if g.Guarantee != tc.want || g.ResendInDoubt != tc.resend {
				t.Fatalf("got %s (resend %v), want %s (resend %v): %s", g.Guarantee, g.ResendInDoubt, tc.want, tc.resend, g.Why)
			}
			if tc.missing != nil && !slices.Equal(append([]string{}, g.Missing...), tc.missing) {
				t.Fatalf("missing %v, want %v", g.Missing, tc.missing)
			}
			if g.Why == "" {
				t.Fatal("no reason given")
			}
		})
	}
	if _, err := provider.Derive(listed, map[string]string{"resend_in_doubt": "sometimes"}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("a bad resend_in_doubt: %v", err)
	}
}

// An answer that no cache may keep is as old as its Date; one without Age
// that says nothing of the sort proves nothing.
func TestEffectiveAge(t *testing.T) {
	for _, tc := range []struct{ age, cc, want string }{
		{"", "", ""},
		{"", "private, no-cache, no-store, must-revalidate", "0"},
		{"", "No-Store", "0"},
		{"", "no-cache", ""},
		{"", "max-age=0, no-storex", ""},
		{"12", "no-store", "12"},
	} {
		if got := (provider.Meta{Age: tc.age, CacheControl: tc.cc}).EffectiveAge(); got != tc.want {
			t.Errorf("Age %q, Cache-Control %q: effective age %q, want %q", tc.age, tc.cc, got, tc.want)
		}
	}
}
