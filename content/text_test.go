package content_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

func TestTextForms(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	day := fieldtext.Day(at)
	c := content.Collection{Name: "notes", Documents: 2, CreatedAt: at,
		Fields: []content.Field{{Name: "title", Type: content.Text}, {Name: "body", Type: content.RichText}}}
	d := content.Document{Collection: "notes", ID: "D1", Version: 3, UpdatedAt: at,
		Fields: content.Fields{"title": json.RawMessage(`"Hi"`), "body": json.RawMessage(`[{"_type":"block","children":[{"_type":"span","text":"yo"}]}]`)}}
	run := content.Run{ID: "R1", Collection: "notes", Field: "title", From: content.Text, To: content.Number, Status: content.RunRunning, Walked: 1, Total: 2, BatchSize: 500, CreatedAt: at, UpdatedAt: at}
	tests := []struct {
		name string
		text func(io.Writer) error
		want string
	}{
		{"collections", content.Collections{c}.WriteText, "NAME   DOCUMENTS  FIELDS\nnotes  2          title:text body:richtext\n"},
		{"collection detail", content.CollectionDetail{Collection: c, Migrations: []content.Run{run}}.WriteText,
			"collection notes: 2 documents, created " + day + "\nNAME   TYPE\ntitle  text\nbody   richtext\nmigration R1: title text→number, running, 1 of 2 walked\n"},
		{"document", c.View(d).WriteText, "notes/D1 version 3, updated " + day + "\nNAME   TYPE      VALUE\ntitle  text      Hi\nbody   richtext  block:span:yo\n"},
		{"documents", content.Documents{d}.WriteText, "ID  VERSION  FIELDS\nD1  3        {\"body\":[{\"_type\":\"block\",\"children\":[{\"_type\":\"span\",\"text\"\n"},
		{"runs", content.Runs{run}.WriteText, "ID  COLLECTION  FIELD  FROM  TO      STATUS   WALKED  TOTAL  CONVERTED  RESTORED  HOLDER  ERROR\n" +
			"R1  notes       title  text  number  running  1       2      0          0         -       -\n"},
		{"run", run.WriteText, "id          R1\ncollection  notes\nfield       title\nfrom        text\nto          number\nstatus      running\nbatch size  500\n" +
			"total       2\nwalked      1\ncreated at  " + day + "\nupdated at  " + day + "\n"},
	}
	for _, tc := range tests {
		var b strings.Builder
		if err := tc.text(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, b.String(), tc.want)
		}
	}
	// A document's JSON form is the document's, without the values.
	got, _ := json.Marshal(c.View(d))
	if want, _ := json.Marshal(d); string(got) != string(want) {
		t.Errorf("DocumentView JSON %s, want %s", got, want)
	}
}

func TestRunProgress(t *testing.T) {
	r := content.Run{Collection: "c", Field: "f", From: content.Text, To: content.Number, Status: content.RunRunning, Walked: 2, Total: 5, Converted: 2}
	if n, total, desc := r.Progress(); n != 2 || total != 5 || desc != "c.f text→number" {
		t.Errorf("running: %d of %d, %q", n, total, desc)
	}
	r.Status, r.Restored = content.RunAborting, 1
	if n, total, desc := r.Progress(); n != 1 || total != 2 || desc != "aborting c.f text→number" {
		t.Errorf("aborting: %d of %d, %q", n, total, desc)
	}
}

func TestRunHeld(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later, earlier := now.Add(time.Second), now.Add(-time.Second)
	for _, tc := range []struct {
		run  content.Run
		want bool
	}{
		{content.Run{}, false},
		{content.Run{Holder: "w", LeaseExpiresAt: &later}, true},
		{content.Run{Holder: "w", LeaseExpiresAt: &earlier}, false},
		{content.Run{Holder: "w"}, false},
		{content.Run{LeaseExpiresAt: &later}, false},
	} {
		if got := tc.run.Held(now); got != tc.want {
			t.Errorf("%+v.Held = %v, want %v", tc.run, got, tc.want)
		}
	}
}
