package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/openai"
)

// chatServer speaks the chat-completions JSON and records what it was sent.
func chatServer(t *testing.T, status int, reply string) (*httptest.Server, *map[string]any) {
	t.Helper()
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if r.Header.Get("Authorization") != "Bearer test-key" {
			t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			_, _ = w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "served-model-q4",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestSummarize(t *testing.T) {
	srv, got := chatServer(t, http.StatusOK, "  Adds the publish pipeline.  ")
	s, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "llama-3.2"})
	if err != nil {
		t.Fatal(err)
	}
	ev := tidemark.Event{ID: "ev1", Title: "publish: add pipeline"}
	d, err := s.Summarize(context.Background(), summarize.Input{Event: ev, Evidence: []byte("commit abc\n    publish: add pipeline\n")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != "Adds the publish pipeline." || d.Model != "llama-3.2" || d.PromptVersion != openai.DefaultPromptVersion {
		t.Fatalf("draft %+v", d)
	}
	if (*got)["model"] != "llama-3.2" {
		t.Fatalf("request model %v", (*got)["model"])
	}
	msgs, _ := (*got)["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages %v", msgs)
	}
	user, _ := msgs[1].(map[string]any)
	if c, _ := user["content"].(string); !strings.Contains(c, "publish: add pipeline") || !strings.Contains(c, "commit abc") {
		t.Fatalf("user message %q lacks the title and evidence", c)
	}
}

func TestServerErrorIsUnavailable(t *testing.T) {
	srv, _ := chatServer(t, http.StatusServiceUnavailable, "")
	s, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "m", PromptVersion: "p1", Prompt: "be brief"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
	if !errors.Is(err, tidemark.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

// An empty answer (or none) is refused as an unusable answer for that
// event: not a write that was not confirmed, not an outage.
func TestEmptyReplyRefused(t *testing.T) {
	for name, body := range map[string]string{
		"blank":      `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"   "}}]}`,
		"null":       `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null}}]}`,
		"no choices": `{"choices":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := answering(t, http.StatusOK, nil, body)
			s, _ := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "m"})
			_, err := s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
			if !errors.Is(err, summarize.ErrUnusable) || errors.Is(err, tidemark.ErrUnconfirmed) || errors.Is(err, tidemark.ErrUnavailable) {
				t.Fatalf("err = %v, want summarize.ErrUnusable only", err)
			}
		})
	}
}

// answering is an endpoint that answers every request with status, header
// and body.
func answering(t *testing.T, status int, header http.Header, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An endpoint that refuses the key (401, 403) or does not know the model
// (404) refuses every event alike: a configuration to fix, matching
// tidemark.ErrInvalid (exit 2), never an ordinary failure of one event.
func TestRefusedConfigurationIsInvalid(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		srv := answering(t, status, nil, `{"error":{"message":"no","type":"invalid_request_error"}}`)
		s, _ := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "m"})
		_, err := s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
		if !errors.Is(err, tidemark.ErrInvalid) || errors.Is(err, tidemark.ErrUnavailable) {
			t.Fatalf("status %d: err = %v, want ErrInvalid", status, err)
		}
		want := "TIDEMARK_OPENAI_API_KEY"
		if status == http.StatusNotFound {
			want = "TIDEMARK_OPENAI_MODEL"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("status %d: err = %v, want it to name %s", status, err, want)
		}
	}
	// A 400 is about this event's request (too long for the model): an
	// ordinary failure.
	srv := answering(t, http.StatusBadRequest, nil, `{"error":{"message":"context length exceeded","type":"invalid_request_error"}}`)
	s, _ := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "m"})
	_, err := s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
	if err == nil || errors.Is(err, tidemark.ErrInvalid) || errors.Is(err, tidemark.ErrUnavailable) {
		t.Fatalf("status 400: err = %v, want an ordinary failure", err)
	}
}

func TestConfigRequired(t *testing.T) {
	if _, err := openai.New(openai.Config{Model: "m"}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("no base url: %v", err)
	}
	if _, err := openai.New(openai.Config{BaseURL: "http://x/v1", Model: "m", Prompt: "custom"}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("custom prompt without version: %v", err)
	}
}

// An endpoint that echoes the API key in its error cannot put it in the
// error we log or store, and the error still says what kind it is.
func TestErrorHidesTheAPIKey(t *testing.T) {
	const key = "sk-secret-api-key-1234"
	for _, status := range []int{http.StatusUnauthorized, http.StatusServiceUnavailable} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			msg, _ := json.Marshal("Incorrect API key provided: " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			_, _ = w.Write([]byte(`{"error":{"message":` + string(msg) + `,"type":"invalid_request_error"}}`))
		}))
		s, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: key, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
		srv.Close()
		if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "Incorrect API key") {
			t.Fatalf("status %d: err = %v", status, err)
		}
		if (status == http.StatusServiceUnavailable) != errors.Is(err, tidemark.ErrUnavailable) {
			t.Fatalf("status %d: err = %v lost its kind", status, err)
		}
	}
}

// An endpoint that never answers is unavailable after the request's
// timeout, not waited on for ever; an answer larger than any summary is
// refused as it is read, not read whole.
func TestAHungOrFloodingEndpointIsBounded(t *testing.T) {
	done := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(done) }) // runs first: the handler returns, then the server closes
	s, err := openai.New(openai.Config{BaseURL: hung.URL + "/v1", APIKey: "k", Model: "m", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
	if !errors.Is(err, tidemark.ErrUnavailable) || time.Since(start) > 10*time.Second {
		t.Fatalf("a hung endpoint: %v after %v, want unavailable after the timeout", err, time.Since(start))
	}

	flood := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 64 { // 4 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}}]}`))
	}))
	t.Cleanup(flood.Close)
	s, err = openai.New(openai.Config{BaseURL: flood.URL + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a 4 MiB answer: %v, want it refused as too large", err)
	}
}

// A base URL that cannot be an endpoint's is refused when the summarizer
// is built, as configuration (tidemark.ErrInvalid), before any request:
// never an outage to wait out.
func TestMalformedBaseURLRefused(t *testing.T) {
	for _, u := range []string{"not a url", "ftp://127.0.0.1:18201/v1", "127.0.0.1:18201/v1", "http://", "http:///v1", "https://host/v1?x=1"} {
		if _, err := openai.New(openai.Config{BaseURL: u, Model: "m"}); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("base url %q: %v, want ErrInvalid", u, err)
		}
	}
	for _, u := range []string{"https://api.openai.com/v1", "http://127.0.0.1:11434/v1/", "http://[::1]:8080/v1"} {
		if _, err := openai.New(openai.Config{BaseURL: u, Model: "m"}); err != nil {
			t.Errorf("base url %q: %v", u, err)
		}
	}
}

// A 429 or 503 with Retry-After carries the wait it asked for (seconds or
// an HTTP date), and is still unavailable.
func TestRetryAfterIsCarried(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for header, want := range map[string]time.Duration{
		"120": 2 * time.Minute,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		"":     0,
		"soon": 0,
	} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			srv := answering(t, status, http.Header{"Retry-After": {header}}, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
			s, _ := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "m", Clock: clock.NewFake(now)})
			_, err := s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
			if !errors.Is(err, tidemark.ErrUnavailable) || summarize.RetryAfter(err) != want {
				t.Errorf("status %d, Retry-After %q: %v, waits %v; want unavailable and %v", status, header, err, summarize.RetryAfter(err), want)
			}
		}
	}
}

// An answer cut off at the token limit (finish_reason "length"), or cut
// here at summarize.MaxTextBytes, is marked as cut, never passed off as
// the whole summary.
func TestCutOffAnswerIsMarked(t *testing.T) {
	for name, tc := range map[string]struct {
		finish, content, want string
	}{
		"length": {"length", "Cut off mid", "Cut off mid " + openai.CutMarker},
		"stop":   {"stop", "Whole answer.", "Whole answer."},
		"long":   {"stop", strings.Repeat("x", summarize.MaxTextBytes+10), strings.Repeat("x", summarize.MaxTextBytes-len(" "+openai.CutMarker)) + " " + openai.CutMarker},
	} {
		t.Run(name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": tc.finish,
				"message": map[string]any{"role": "assistant", "content": tc.content}}}})
			srv := answering(t, http.StatusOK, nil, string(body))
			s, _ := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "m"})
			d, err := s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
			if err != nil || d.Text != tc.want || len(d.Text) > summarize.MaxTextBytes {
				t.Fatalf("draft %.60q… (%d bytes), %v; want %.60q…", d.Text, len(d.Text), err, tc.want)
			}
		})
	}
}

// rawAnswer is an endpoint that answers 200 with contentType and body as
// given.
func rawAnswer(t *testing.T, contentType string, body []byte) *openai.Summarizer {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	s, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An answer is read in the character encoding it says it is in, with or
// without a byte-order mark; a stream nobody asked for is refused as the
// endpoint's configuration, saying so.
func TestAnswerEncodings(t *testing.T) {
	const answer = `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Café"}}]}`
	latin1 := []byte(strings.ReplaceAll(answer, "é", "\xe9"))
	utf16 := []byte{0xFF, 0xFE}
	for _, r := range answer {
		utf16 = append(utf16, byte(r), byte(r>>8)) // the answer is in the BMP
	}
	for name, tc := range map[string]struct {
		contentType string
		body        []byte
	}{
		"iso-8859-1":     {"application/json; charset=iso-8859-1", latin1},
		"windows-1252":   {"application/json; charset=windows-1252", latin1},
		"utf-8 with BOM": {"application/json", append([]byte("\xEF\xBB\xBF"), answer...)},
		"utf-16 BOM":     {"application/json; charset=utf-16", utf16},
		"utf-8":          {"application/json; charset=utf-8", []byte(answer)},
	} {
		d, err := rawAnswer(t, tc.contentType, tc.body).Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
		if err != nil || d.Text != "Café" {
			t.Errorf("%s: %q, %v; want Café", name, d.Text, err)
		}
	}
	_, err := rawAnswer(t, "application/json; charset=x-nobody-knows", latin1).Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
	if !errors.Is(err, summarize.ErrUnusable) || errors.Is(err, tidemark.ErrUnavailable) || !strings.Contains(err.Error(), "x-nobody-knows") {
		t.Errorf("an answer in an unknown encoding: %v, want an unusable answer naming it", err)
	}
	sse := "data: " + answer + "\n\ndata: [DONE]\n\n"
	_, err = rawAnswer(t, "text/event-stream", []byte(sse)).Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
	if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "text/event-stream") || !strings.Contains(err.Error(), "TIDEMARK_OPENAI_BASE_URL") {
		t.Errorf("a streamed answer: %v, want ErrInvalid naming the stream and TIDEMARK_OPENAI_BASE_URL", err)
	}
}
