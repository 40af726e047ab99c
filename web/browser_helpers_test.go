package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive a real Chromium (chromedp) through the pages a
// person uses. They run where TIDEMARK_TEST_CHROMIUM names the browser
// (.ci/run installs Debian's chromium and sets it) and skip elsewhere, so
// `go test ./...` passes on a machine without one. Screenshots of every
// page at desktop and mobile widths go to TIDEMARK_TEST_ARTIFACTS/browser
// (default: the test's temporary directory).
const (
	envChromium  = "TIDEMARK_TEST_CHROMIUM"
	envArtifacts = "TIDEMARK_TEST_ARTIFACTS"
)

// widths are the viewports every page is checked and photographed at.
var widths = []struct {
	name          string
	width, height int64
	mobile        bool
}{
	{"desktop", 1280, 800, false},
	{"mobile", 390, 844, true},
}

func mustBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := os.Getenv(envChromium)
	if exe == "" {
		t.Skipf("no browser: set %s to a Chromium binary (.ci/run does) to run the browser tests", envChromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root in a container
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("lang", "en-US"),
	)
	// An upper bound so a wedged browser fails the test instead of
	// hanging it; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return ctx
}

// mustDo runs browser steps; mustGet runs one that answers a value.
func mustDo(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func mustGet[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mustOpen navigates to url and returns the page's visible text.
func mustOpen(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	mustDo(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
	return mustGet(t, ctx, chromedp.Text(chromedp.CSS("body")))
}

func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mustLookRight photographs the current page at every width and fails
// when it does not fit: a page wider than a phone's screen scrolls
// sideways, which is broken on a phone.
func mustLookRight(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	for _, w := range widths {
		opts := []chromedp.EmulateViewportOption{}
		if w.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))
		}
		mustDo(t, ctx, chromedp.EmulateViewport(w.width, w.height, opts...), chromedp.Reload(), chromedp.WaitReady(chromedp.CSS("body")))
		overflow := mustGet(t, ctx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
		png := mustGet(t, ctx, chromedp.FullScreenshot(100))
		file := filepath.Join(dir, name+"-"+w.name+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
		if overflow > 0 {
			t.Errorf("%s at %s (%dpx) is %dpx wider than the screen: it scrolls sideways (%s)", name, w.name, w.width, overflow, file)
		}
	}
}

// mustSignIn signs in on the sign-in page the browser is at, and waits
// for the page it is sent on to, which has what waitFor selects.
func mustSignIn(t *testing.T, ctx context.Context, token, waitFor string) {
	t.Helper()
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="token"]`), token), chromedp.Submit(chromedp.CSS(`input[name="token"]`)),
		chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// mustNotice returns the notice a write left on the page, failing when
// there is none or it does not say want.
func mustNotice(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	text := mustGet(t, ctx, chromedp.Text(chromedp.CSS(`p.notice`)))
	if !strings.Contains(text, want) {
		t.Fatalf("the notice says %q, want %q", text, want)
	}
	return text
}

// submit clicks the submit button sel and waits for the page the form's
// answer loads, with its notice: a notice still shown from the last
// write must not pass for this one's.
func submit(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var none chromedp.Void
		if _, err := chromedp.Evaluate[string](`document.documentElement.dataset.submitted = "1"`)(ctx, tg); err != nil {
			return none, err
		}
		if _, err := chromedp.Click(chromedp.CSS(sel))(ctx, tg); err != nil {
			return none, err
		}
		for {
			// While the next page loads, the script may meet no document
			// at all: that is "not yet", not an error.
			loaded, err := chromedp.Evaluate[bool](`document.documentElement.dataset.submitted === undefined &&
				document.readyState === "complete" && document.querySelector("p.notice") !== null`)(ctx, tg)
			if err == nil && loaded {
				return none, nil
			}
			select {
			case <-ctx.Done():
				return none, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// mustSee fails when the page does not show each of want.
func mustSee(t *testing.T, ctx context.Context, page string, want ...string) string {
	t.Helper()
	text := mustGet(t, ctx, chromedp.Text(chromedp.CSS("body")))
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not show %q:\n%s", page, w, text)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return text
}

// mustPhotograph saves the page as it stands, at the width it is shown
// at, without reloading it: what a write's notice looks like (a reload
// would have taken it).
func mustPhotograph(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := mustGet(t, ctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
