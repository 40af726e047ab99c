package providertest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// The helpers below drive a real Matrix homeserver (Dendrite in CI, see
// .ci/dendrite.sh) from tests: a user and a room of a test's own, and what
// arrived in the room.

// uniqueName names what a test makes on a shared server.
func uniqueName() string { return strings.ToLower(rand.Text()) }

// MustRegisterMatrixUser registers a new user through the homeserver's
// shared-secret registration (the admin API Synapse defined and Dendrite
// serves) and returns its access token and user id.
func MustRegisterMatrixUser(t testing.TB, hs, secret string) (token, userID string) {
	t.Helper()
	var nonce struct{ Nonce string }
	mustMatrixJSON(t, http.MethodGet, hs+"/_synapse/admin/v1/register", "", nil, &nonce)
	user, pass := "tm"+uniqueName(), "pw-"+uniqueName()
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(nonce.Nonce + "\x00" + user + "\x00" + pass + "\x00notadmin"))
	var reg struct {
		AccessToken string `json:"access_token"`
		UserID      string `json:"user_id"`
	}
	mustMatrixJSON(t, http.MethodPost, hs+"/_synapse/admin/v1/register", "", map[string]any{
		"nonce": nonce.Nonce, "username": user, "password": pass, "admin": false, "mac": hex.EncodeToString(mac.Sum(nil)),
	}, &reg)
	if reg.AccessToken == "" || reg.UserID == "" {
		t.Fatalf("registration gave no token: %+v", reg)
	}
	return reg.AccessToken, reg.UserID
}

// MustCreateMatrixRoom creates a private room and returns its id.
func MustCreateMatrixRoom(t testing.TB, hs, token string) string {
	t.Helper()
	var room struct {
		RoomID string `json:"room_id"`
	}
	mustMatrixJSON(t, http.MethodPost, hs+"/_matrix/client/v3/createRoom", token, map[string]any{"preset": "private_chat"}, &room)
	return room.RoomID
}

// MatrixBodies returns the bodies our user sent to the room, oldest
// first. Dendrite answers a send once its room server took the event, and
// serves /messages from its sync server, which catches up a moment later;
// so it first sends a marker of its own, and reads until the marker shows
// (everything sent before it shows then too), waiting between reads on a
// /sync long poll: the server's own signal that something new arrived.
func MatrixBodies(t testing.TB, hs, token, room, user string) []string {
	t.Helper()
	marker := "marker " + uniqueName()
	var sent struct {
		EventID string `json:"event_id"`
	}
	mustMatrixJSON(t, http.MethodPut, hs+"/_matrix/client/v3/rooms/"+url.PathEscape(room)+"/send/m.room.message/"+uniqueName(), token,
		map[string]string{"msgtype": "m.notice", "body": marker}, &sent)
	since := ""
	for range 30 {
		bodies, seen := matrixRead(t, hs, token, room, user, marker)
		if seen {
			return bodies
		}
		q := url.Values{"timeout": {"5000"}, "filter": {`{"room":{"rooms":[]},"presence":{"types":[]}}`}}
		if since != "" {
			q.Set("since", since)
		}
		var sync struct {
			NextBatch string `json:"next_batch"`
		}
		mustMatrixJSON(t, http.MethodGet, hs+"/_matrix/client/v3/sync?"+q.Encode(), token, nil, &sync)
		since = sync.NextBatch
	}
	t.Fatalf("the room's messages never showed the marker %s", sent.EventID)
	return nil
}

// matrixRead reads the room's messages newest first (Dendrite wants a from
// token to read forwards) and returns our user's bodies but the marker,
// oldest first, and whether the marker was among them.
func matrixRead(t testing.TB, hs, token, room, user, marker string) ([]string, bool) {
	t.Helper()
	var out []string
	seen := false
	from := ""
	for range 100 {
		q := url.Values{"dir": {"b"}, "limit": {"100"}}
		if from != "" {
			q.Set("from", from)
		}
		var page struct {
			Chunk []struct {
				Type    string `json:"type"`
				Sender  string `json:"sender"`
				Content struct {
					Msgtype string `json:"msgtype"`
					Body    string `json:"body"`
				} `json:"content"`
			} `json:"chunk"`
			End string `json:"end"`
		}
		mustMatrixJSON(t, http.MethodGet, hs+"/_matrix/client/v3/rooms/"+url.PathEscape(room)+"/messages?"+q.Encode(), token, nil, &page)
		for _, e := range page.Chunk {
			switch {
			case e.Type != "m.room.message" || e.Sender != user:
			case e.Content.Body == marker:
				seen = true
			case e.Content.Msgtype == "m.notice":
				// An earlier read's marker.
			default:
				out = append(out, e.Content.Body)
			}
		}
		if page.End == "" || len(page.Chunk) == 0 {
			slices.Reverse(out)
			return out, seen
		}
		from = page.End
	}
	t.Fatal("more than 100 pages of room messages")
	return nil, false
}

func mustMatrixJSON(t testing.TB, method, u, token string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: status %d: %s", method, u, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, u, err, b)
	}
}
