package outbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// Limits on exported plan input.
const (
	maxPlanLineBytes = 16 << 20
	maxPlanRecords   = 10_000_000
)

type intentRecord struct {
	ID         *string `json:"id"`
	Rank       *int64  `json:"rank"`
	Target     *string `json:"target"`
	Parent     *string `json:"parent"`
	Body       *string `json:"body"`
	BodySHA256 *string `json:"body_sha256"`
}

type ownRecord struct {
	RemoteID   *string `json:"remote_id"`
	CreatedAt  *string `json:"created_at"`
	Target     *string `json:"target"`
	Parent     *string `json:"parent"`
	Body       *string `json:"body"`
	BodySHA256 *string `json:"body_sha256"`
}

// ReadIntents reads INTENTS.jsonl: one object a line with id, rank (the
// line order, from 1, when absent), target, and optional parent and body or
// body_sha256. name is used in errors.
func ReadIntents(r io.Reader, name string) ([]PlanIntent, error) {
	var out []PlanIntent
	err := eachLine(r, name, func(n int, line []byte) error {
		var rec intentRecord
		if err := strictUnmarshal(line, &rec); err != nil {
			return tidemark.Invalidf(fmt.Sprintf("%s line %d", name, n), "", "%v", err)
		}
		field := func(f string) string { return fmt.Sprintf("%s line %d: %s", name, n, f) }
		if rec.ID == nil || *rec.ID == "" {
			return tidemark.Invalidf(field("id"), "", "required")
		}
		if rec.Target == nil || *rec.Target == "" {
			return tidemark.Invalidf(field("target"), "", "required")
		}
		in := PlanIntent{ID: *rec.ID, Rank: int64(n), Target: *rec.Target}
		if rec.Rank != nil {
			in.Rank = *rec.Rank
		}
		if rec.Parent != nil {
			in.Parent, in.HasParent = *rec.Parent, true
		}
		h, err := bodyHash(rec.Body, rec.BodySHA256, field)
		if err != nil {
			return err
		}
		in.BodySHA256 = h
		out = append(out, in)
		return nil
	})
	return out, err
}

// ReadOwnWrites reads OWN.jsonl: one object a line with remote_id,
// created_at (RFC 3339), target, and optional parent and body or
// body_sha256, in the order the provider listed them.
func ReadOwnWrites(r io.Reader, name string) ([]OwnWrite, error) {
	var out []OwnWrite
	err := eachLine(r, name, func(n int, line []byte) error {
		var rec ownRecord
		if err := strictUnmarshal(line, &rec); err != nil {
			return tidemark.Invalidf(fmt.Sprintf("%s line %d", name, n), "", "%v", err)
		}
		field := func(f string) string { return fmt.Sprintf("%s line %d: %s", name, n, f) }
		if rec.RemoteID == nil || *rec.RemoteID == "" {
			return tidemark.Invalidf(field("remote_id"), "", "required")
		}
		if rec.Target == nil || *rec.Target == "" {
			return tidemark.Invalidf(field("target"), "", "required")
		}
		if rec.CreatedAt == nil {
			return tidemark.Invalidf(field("created_at"), "", "required (RFC 3339)")
		}
		at, err := time.Parse(time.RFC3339Nano, *rec.CreatedAt)
		if err != nil {
			return tidemark.Invalidf(field("created_at"), *rec.CreatedAt, "want RFC 3339")
		}
		w := OwnWrite{RemoteID: *rec.RemoteID, CreatedAt: at, Target: *rec.Target}
		if rec.Parent != nil {
			w.Parent, w.HasParent = *rec.Parent, true
		}
		if w.BodySHA256, err = bodyHash(rec.Body, rec.BodySHA256, field); err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	return out, err
}

// ReadIDs reads intent ids, one a line; blank lines and lines starting with
// # are skipped.
func ReadIDs(r io.Reader, name string) ([]string, error) {
	var out []string
	err := eachLine(r, name, func(n int, line []byte) error {
		s := strings.TrimSpace(string(line))
		if strings.HasPrefix(s, "#") {
			return nil
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

func bodyHash(body, sum *string, field func(string) string) (string, error) {
	var h string
	if sum != nil {
		h = strings.ToLower(strings.TrimSpace(*sum))
		if !isHexSHA256(h) {
			return "", tidemark.Invalidf(field("body_sha256"), *sum, "want 64 hex digits")
		}
	}
	if body != nil {
		b := BodySHA256([]byte(*body))
		if h != "" && h != b {
			return "", tidemark.Invalidf(field("body_sha256"), *sum, "does not match the SHA-256 of body (%s)", b)
		}
		h = b
	}
	return h, nil
}

func strictUnmarshal(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value on the line")
	}
	return nil
}

// eachLine calls fn with each non-blank line and its 1-based number among
// the non-blank lines.
func eachLine(r io.Reader, name string, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxPlanLineBytes)
	n := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		if n > maxPlanRecords {
			return tidemark.Invalidf(name, "", "more than %d records", maxPlanRecords)
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return tidemark.Invalidf(name, "", "read: %v", err)
	}
	return nil
}

// PlanFiles reads exported intents, own writes and (when unexecPath is not
// "") unexecutable ids, and plans from them. It is the offline planner
// behind `tidemark outbox plan`.
func PlanFiles(intentsPath, ownPath, unexecPath string) (*Plan, error) {
	var in PlanInput
	err := withFile(intentsPath, "--intents", func(r io.Reader) (err error) {
		in.Intents, err = ReadIntents(r, intentsPath)
		return err
	})
	if err == nil {
		err = withFile(ownPath, "--own-writes", func(r io.Reader) (err error) {
			in.OwnWrites, err = ReadOwnWrites(r, ownPath)
			return err
		})
	}
	if err == nil && unexecPath != "" {
		err = withFile(unexecPath, "--unexecutable", func(r io.Reader) (err error) {
			in.Unexecutable, err = ReadIDs(r, unexecPath)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	return MakePlan(in)
}

func withFile(path, flag string, fn func(io.Reader) error) error {
	if path == "" {
		return tidemark.Invalidf(flag, "", "required")
	}
	f, err := os.Open(path)
	if err != nil {
		return tidemark.Invalidf(flag, path, "%v", err)
	}
	defer f.Close()
	return fn(f)
}
