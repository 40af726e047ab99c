package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// openAPIParam is one parameter of an operation, inline or a $ref to
// the document's parameters.
type openAPIParam struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

type openAPIOperation struct {
	Parameters []openAPIParam             `json:"parameters"`
	Responses  map[string]json.RawMessage `json:"responses"`
	Security   *[]map[string][]string     `json:"security"`
}

// Every status an operation answers is one the OpenAPI document lists for
// it. Each operation is asked what makes the site's guards and its
// handler refuse a request: another Host (421), no token (401), another
// origin's write (403), a body too large (413) or not what it takes (400),
// path parameters and filters naming nothing there (404), a bad limit
// (400); and what it answers a plain request. A status it answers that
// the document does not list is an error, naming the request.
func TestOpenAPIListsEveryStatusTheAPIAnswers(t *testing.T) {
	api := mustFilledAPI(t)
	var doc struct {
		Paths      map[string]map[string]openAPIOperation `json:"paths"`
		Components struct {
			Parameters map[string]openAPIParam `json:"parameters"`
		} `json:"components"`
	}
	if r := api.do("GET", "/api/openapi.json", "", nil); json.Unmarshal([]byte(r.Body), &doc) != nil {
		t.Fatal("GET /api/openapi.json: not JSON")
	}
	type probe struct {
		what, path, token string
		edit              func(*http.Request)
	}
	body := func(s string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Content-Type", "application/json")
			r.Body = http.NoBody
			if s != "" {
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(s)), int64(len(s))
			}
		}
	}
	for _, pattern := range slices.Sorted(maps.Keys(doc.Paths)) {
		for _, method := range slices.Sorted(maps.Keys(doc.Paths[pattern])) {
			op := doc.Paths[pattern][method]
			method = strings.ToUpper(method)
			write := method != "GET"
			private := op.Security == nil || len(*op.Security) > 0
			var query []string
			path := pattern
			for _, p := range op.Parameters {
				if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
					p = doc.Components.Parameters[name]
				}
				switch p.In {
				case "path":
					path = strings.ReplaceAll(path, "{"+p.Name+"}", "nope")
				case "query":
					query = append(query, p.Name)
				}
			}
			empty := body("")
			if write {
				empty = body("{}")
			}
			probes := []probe{
				{"a plain request", path, api.token, empty},
				{"another Host", path, api.token, func(r *http.Request) { empty(r); r.Host = "evil.example" }},
			}
			if private {
				probes = append(probes, probe{"no token", path, "", empty})
			}
			if write {
				probes = append(probes,
					probe{"another origin", path, api.token, func(r *http.Request) { empty(r); r.Header.Set("Origin", "http://evil.example") }},
					probe{"a field it does not take", path, api.token, body(`{"no_such_field": 1}`)},
					probe{"a form", path, api.token, func(r *http.Request) {
						body("a=1")(r)
						r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					}},
					probe{"a body too large", path, api.token, body(`{"x":"` + strings.Repeat("x", 3<<20) + `"}`)})
			}
			for _, q := range query {
				v := "nope"
				if q == "limit" {
					v = "0"
				}
				probes = append(probes, probe{"?" + q + "=" + v, path + "?" + q + "=" + url.QueryEscape(v), api.token, empty})
			}
			for _, p := range probes {
				r := api.do(method, p.path, p.token, p.edit)
				if _, ok := op.Responses[fmt.Sprint(r.Code)]; !ok {
					t.Errorf("%s %s (%s: %s %s) answers %d, which openapi.json does not list for it: %.200s",
						method, pattern, p.what, method, p.path, r.Code, r.Body)
				}
			}
		}
	}
}
