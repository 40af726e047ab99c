// Package openai summarizes through an OpenAI-compatible chat-completions
// endpoint: OpenAI itself, or a local server such as llama.cpp's or
// Ollama's. The base URL, model and prompt version are configured; each
// draft records the model and prompt version, so changing either makes new
// summaries that supersede the old rather than conflict with them.
package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/redact"
	"github.com/tidemark/tidemark/summarize"
)

// DefaultPromptVersion names the built-in prompt.
const DefaultPromptVersion = "chat-v1"

// DefaultPrompt is the system prompt of DefaultPromptVersion.
const DefaultPrompt = `You summarize one change for a changelog wiki. You are given the change's
title and its evidence (for a git commit: metadata, message and diffstat).
Write two to four plain sentences for a reader who did not see the change:
what changed and why, naming the most important files or components. No
markdown, no headings, no preamble.`

// CutMarker ends a summary whose answer was cut off: the model stopped at
// its token limit (finish_reason "length"), or the answer was longer than
// summarize.MaxTextBytes.
const CutMarker = "[…]"

// maxEvidenceBytes bounds what is sent to the endpoint.
const maxEvidenceBytes = 24 << 10

// Config configures the summarizer.
type Config struct {
	// BaseURL is the endpoint's base, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1 (Ollama).
	BaseURL string
	APIKey  string
	Model   string
	// PromptVersion names Prompt; change it whenever Prompt changes.
	PromptVersion string
	Prompt        string
	MaxTokens     int
	// Timeout bounds one request, answer included (0: DefaultTimeout); it
	// is ignored when HTTPClient is set.
	Timeout    time.Duration
	HTTPClient *http.Client
	// Clock reads an HTTP-date Retry-After (nil: the system clock).
	Clock clock.Clock
}

// DefaultTimeout bounds one request to the endpoint: long enough for a
// local model on a CPU to write a few sentences, short enough that a hung
// endpoint is an outage (unavailable) instead of a wait for ever.
const DefaultTimeout = 3 * time.Minute

// maxAnswerBytes bounds an answer as it is read: a summary is at most
// summarize.MaxTextBytes, so an answer far larger is refused unread.
const maxAnswerBytes = 1 << 20

// Summarizer calls a chat-completions endpoint.
type Summarizer struct {
	cfg    Config
	client *goopenai.Client
}

var _ summarize.Summarizer = (*Summarizer)(nil)

// CheckBaseURL says why u cannot be an endpoint's base URL (nil if it
// can): it must be an absolute http or https URL with a host, and no query
// or fragment, since paths are appended to it.
func CheckBaseURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil || (p.Scheme != "http" && p.Scheme != "https"):
		return errors.New("want an http or https URL such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1")
	case p.Host == "" || p.Hostname() == "":
		return errors.New("has no host")
	case p.RawQuery != "" || p.Fragment != "" || strings.HasSuffix(p.Path, "?"):
		return errors.New("must not have a query or fragment: paths are appended to it")
	}
	return nil
}

// New returns a summarizer for cfg.
func New(cfg Config) (*Summarizer, error) {
	if cfg.BaseURL == "" {
		return nil, tidemark.Invalidf("openai base url", "", "is required (e.g. https://api.openai.com/v1)")
	}
	if err := CheckBaseURL(cfg.BaseURL); err != nil {
		return nil, tidemark.Invalidf("openai base url", redact.URL(cfg.BaseURL, false), "%v", err)
	}
	if cfg.Model == "" {
		return nil, tidemark.Invalidf("openai model", "", "is required")
	}
	if cfg.Prompt == "" {
		cfg.Prompt = DefaultPrompt
		if cfg.PromptVersion == "" {
			cfg.PromptVersion = DefaultPromptVersion
		}
	}
	if cfg.PromptVersion == "" {
		return nil, tidemark.Invalidf("openai prompt version", "", "is required with a custom prompt")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 300
	}
	cc := goopenai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.HTTPClient != nil {
		// The caller's client, its answers read as ours are.
		c := *cfg.HTTPClient
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = decodedAnswers{next}
		c.CheckRedirect = httpx.CredentialsStayOnOrigin(c.CheckRedirect)
		cc.HTTPClient = &c
	} else {
		if cfg.Timeout <= 0 {
			cfg.Timeout = DefaultTimeout
		}
		cc.HTTPClient = &http.Client{Timeout: cfg.Timeout, Transport: decodedAnswers{boundedAnswers{http.DefaultTransport}},
			// The API key goes only to the endpoint's own origin.
			CheckRedirect: httpx.CredentialsStayOnOrigin(nil)}
	}
	return &Summarizer{cfg: cfg, client: goopenai.NewClientWithConfig(cc)}, nil
}

// boundedAnswers refuses, as it reads them, answers over maxAnswerBytes.
type boundedAnswers struct{ next http.RoundTripper }

func (b boundedAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxAnswerBytes}
	}
	return resp, err
}

// errStreamed: the endpoint answered a stream (server-sent events), which
// the summarizer never asks for.
var errStreamed = errors.New("the endpoint answered a stream (text/event-stream) though none was asked for")

// errUndecodable: an answer whose characters cannot be read.
var errUndecodable = errors.New("the answer cannot be read as text")

// decodedAnswers hands the client a successful answer as UTF-8 JSON: read
// in the character encoding its Content-Type names (a local server or a
// proxy may answer ISO-8859-1), or that a UTF-16 byte-order mark says,
// without a UTF-8 byte-order mark; a stream is refused (errStreamed).
type decodedAnswers struct{ next http.RoundTripper }

func (d decodedAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	mediaType, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "text/event-stream" {
		resp.Body.Close()
		return nil, errStreamed
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if body, err = toUTF8(body, params["charset"]); err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// toUTF8 decodes an answer in the encoding a byte-order mark says, or
// label (a charset's name), or UTF-8; a UTF-8 byte-order mark is dropped.
// A label nobody knows over a body that is UTF-8 is passed over.
func toUTF8(body []byte, label string) ([]byte, error) {
	var enc encoding.Encoding
	switch l := strings.ToLower(strings.TrimSpace(label)); {
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}), bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		enc = unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM)
	case l == "", l == "utf-8", l == "utf8", utf8.Valid(body) && (l == "us-ascii" || l == "ascii"):
	default:
		if enc, _ = charset.Lookup(l); enc == nil && !utf8.Valid(body) {
			return nil, fmt.Errorf("%w: it is in a character encoding tidemark does not know (charset %q)", errUndecodable, label)
		}
	}
	if enc != nil {
		out, err := enc.NewDecoder().Bytes(body)
		if err != nil {
			return nil, fmt.Errorf("%w: it is not %s as it says: %v", errUndecodable, label, err)
		}
		body = out
	}
	return bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF")), nil
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

var errAnswerTooLarge = fmt.Errorf("the answer is larger than %d bytes, far more than a summary", maxAnswerBytes)

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

func (s *Summarizer) clock() clock.Clock {
	if s.cfg.Clock == nil {
		return clock.System{}
	}
	return s.cfg.Clock
}

// Identity implements summarize.Summarizer.
func (s *Summarizer) Identity() (string, string) { return s.cfg.Model, s.cfg.PromptVersion }

// Summarize implements summarize.Summarizer.
func (s *Summarizer) Summarize(ctx context.Context, in summarize.Input) (_ summarize.Draft, err error) {
	// An endpoint may echo the key it was sent; our error is logged and
	// stored, so it never carries the key (nor a password in the base URL).
	defer func() { err = redact.Err(err, append(redact.Credentials(s.cfg.BaseURL), s.cfg.APIKey)...) }()
	// The message sent is unchanged by the richer input (the previous
	// revision is not sent), so drafts under a configured prompt version
	// stay what they were.
	ev := in.Event
	body := string(in.Evidence)
	if len(body) > maxEvidenceBytes {
		body = summarize.Cut(body, maxEvidenceBytes) + "\n[evidence truncated]"
	}
	resp, err := s.client.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{
		Model:       s.cfg.Model,
		Temperature: 0,
		// max_tokens, not its successor max_completion_tokens: servers
		// that speak this API besides OpenAI's may know only the first.
		MaxTokens: s.cfg.MaxTokens, //lint:ignore SA1019 see above
		Messages: []goopenai.ChatCompletionMessage{
			{Role: goopenai.ChatMessageRoleSystem, Content: s.cfg.Prompt},
			{Role: goopenai.ChatMessageRoleUser, Content: "Title: " + ev.Title + "\n\nEvidence:\n" + body},
		},
	})
	if errors.Is(err, errStreamed) {
		// Every event would be answered alike: not the API configured.
		return summarize.Draft{}, fmt.Errorf("summarize %s: %w", ev.ID,
			tidemark.Invalidf("TIDEMARK_OPENAI_BASE_URL", redact.URL(s.cfg.BaseURL, false), "%v: not an OpenAI-compatible chat-completions API, or a proxy that streams", errStreamed))
	}
	if errors.Is(err, errUndecodable) {
		return summarize.Draft{}, fmt.Errorf("summarize %s: %w: %w", ev.ID, err, summarize.ErrUnusable)
	}
	if err != nil {
		var apiErr *goopenai.APIError
		var reqErr *goopenai.RequestError
		status := 0
		switch {
		case errors.As(err, &apiErr):
			status = apiErr.HTTPStatusCode
		case errors.As(err, &reqErr):
			status = reqErr.HTTPStatusCode
		}
		switch {
		case status >= 500 || status == http.StatusTooManyRequests:
			err = fmt.Errorf("summarize %s: %w: %w", ev.ID, tidemark.ErrUnavailable, err)
			if wait := httpx.RetryAfter(resp.Header().Get("Retry-After"), s.clock().Now()); wait > 0 {
				err = &summarize.RetryAfterError{After: wait, Err: err}
			}
			return summarize.Draft{}, err
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			// Every event would be refused alike: configuration to fix.
			// As an object store that refuses our credentials: over the
			// API a 502, the server's setup to fix.
			return summarize.Draft{}, fmt.Errorf("summarize %s: the endpoint refused TIDEMARK_OPENAI_API_KEY (HTTP %d; check the key and its rights): %w: %w",
				ev.ID, status, tidemark.ErrRefused, err)
		case status == http.StatusNotFound:
			return summarize.Draft{}, fmt.Errorf("summarize %s: %w: %w", ev.ID,
				tidemark.Invalidf("TIDEMARK_OPENAI_MODEL", s.cfg.Model, "the endpoint answered 404: no such model, or TIDEMARK_OPENAI_BASE_URL is not a chat-completions API"), err)
		case errors.As(err, &apiErr), errors.As(err, &reqErr), ctx.Err() != nil:
			return summarize.Draft{}, fmt.Errorf("summarize %s: %w", ev.ID, err)
		default: // could not connect
			return summarize.Draft{}, fmt.Errorf("summarize %s: %w: %w", ev.ID, tidemark.ErrUnavailable, err)
		}
	}
	if len(resp.Choices) == 0 {
		return summarize.Draft{}, fmt.Errorf("summarize %s: the endpoint returned no choices: %w", ev.ID, summarize.ErrUnusable)
	}
	text := strings.TrimSpace(resp.Choices[0].Message.Content)
	if text == "" {
		return summarize.Draft{}, fmt.Errorf("summarize %s: the endpoint returned an empty summary: %w", ev.ID, summarize.ErrUnusable)
	}
	// A cut-off answer is shown as cut: by the model at its token limit,
	// or here at MaxTextBytes.
	if resp.Choices[0].FinishReason == goopenai.FinishReasonLength {
		text += " " + CutMarker
	}
	if len(text) > summarize.MaxTextBytes {
		text = strings.TrimRight(summarize.Cut(text, summarize.MaxTextBytes-len(" "+CutMarker)), " ") + " " + CutMarker
	}
	// The draft records the model the caller configured: it is part of
	// the identity and must be stable across calls; a server's own
	// response model name may vary (aliases, quantization tags).
	return summarize.Draft{Text: text, Model: s.cfg.Model, PromptVersion: s.cfg.PromptVersion}, nil
}
