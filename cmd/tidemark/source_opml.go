package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/detect"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/pipeline"
)

// Limits on an OPML file.
const (
	maxOPMLBytes    = 10 << 20
	maxOPMLDepth    = 32
	maxOPMLOutlines = 10000
)

type opmlDoc struct {
	XMLName xml.Name    `xml:"opml"`
	Version string      `xml:"version,attr"`
	Head    opmlHead    `xml:"head"`
	Body    opmlOutline `xml:"body"`
}

type opmlHead struct {
	Title       string `xml:"title"`
	DateCreated string `xml:"dateCreated,omitempty"`
	Docs        string `xml:"docs,omitempty"`
}

type opmlOutline struct {
	Text     string        `xml:"text,attr,omitempty"`
	Title    string        `xml:"title,attr,omitempty"`
	Type     string        `xml:"type,attr,omitempty"`
	XMLURL   string        `xml:"xmlUrl,attr,omitempty"`
	HTMLURL  string        `xml:"htmlUrl,attr,omitempty"`
	Outlines []opmlOutline `xml:"outline"`
}

// opmlFeed is one feed found in an OPML file.
type opmlFeed struct {
	Name     string `json:"name"`
	Location string `json:"location"`
	Reason   string `json:"reason,omitempty"`
}

// parseOPML returns the feeds of an OPML document in document order.
func parseOPML(r io.Reader) ([]opmlFeed, error) {
	var doc opmlDoc
	dec := xml.NewDecoder(io.LimitReader(r, maxOPMLBytes))
	dec.Strict = false
	dec.Entity = xml.HTMLEntity
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := dec.Decode(&doc); err != nil {
		return nil, tidemark.Invalidf("OPML file", "", "unreadable: %v", err)
	}
	var feeds []opmlFeed
	var walk func(o opmlOutline, depth int) error
	walk = func(o opmlOutline, depth int) error {
		if depth > maxOPMLDepth {
			return tidemark.Invalidf("OPML file", "", "outlines nest deeper than %d", maxOPMLDepth)
		}
		if u := strings.TrimSpace(o.XMLURL); u != "" {
			if len(feeds) >= maxOPMLOutlines {
				return tidemark.Invalidf("OPML file", "", "more than %d feeds", maxOPMLOutlines)
			}
			name := o.Title
			if name == "" {
				name = o.Text
			}
			feeds = append(feeds, opmlFeed{Name: slug(name), Location: u})
		}
		for _, c := range o.Outlines {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(doc.Body, 0); err != nil {
		return nil, err
	}
	return feeds, nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	s = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
	}
	return s
}

func newSourceImportOPMLCmd(a *app) *cobra.Command {
	var (
		interval       time.Duration
		budget         int
		dryRun, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "import-opml FILE",
		Short: "Add the feeds of an OPML file as feed sources (already tracked feeds are skipped)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var r io.Reader = os.Stdin
			if args[0] != "-" {
				fh, err := os.Open(args[0])
				if err != nil {
					return tidemark.Invalidf("FILE", args[0], "%v", err)
				}
				defer fh.Close()
				r = fh
			}
			feeds, err := parseOPML(r)
			if err != nil {
				return err
			}
			db, err := a.open(ctx)
			if err != nil {
				return err
			}
			st := db.Ingest()
			existing, err := st.Sources(ctx)
			if err != nil {
				return err
			}
			names, tracked := map[string]bool{}, map[string]string{}
			for _, s := range existing {
				names[s.Name] = true
				if s.Kind == "feed" {
					tracked[s.Location] = s.Name
				}
			}
			report := struct {
				Added   []opmlFeed `json:"added"`
				Skipped []opmlFeed `json:"skipped"`
			}{[]opmlFeed{}, []opmlFeed{}}
			for _, f := range feeds {
				if err := detect.CheckURL(f.Location); err != nil {
					f.Reason = err.Error()
					report.Skipped = append(report.Skipped, f)
					continue
				}
				if n, ok := tracked[f.Location]; ok {
					f.Name, f.Reason = n, "already tracked"
					report.Skipped = append(report.Skipped, f)
					continue
				}
				if f.Name == "" {
					f.Name = detect.Name(f.Location)
				}
				base := f.Name
				for i := 2; names[f.Name]; i++ {
					f.Name = fmt.Sprintf("%s-%d", base, i)
				}
				ns := ingest.NewSource{Name: f.Name, Kind: "feed", Location: f.Location, Config: map[string]string{}, Interval: interval, RetryBudget: budget,
					AllowPrivate: a.cfg.AllowPrivate}
				if err := pipeline.ValidateSource(ns); err != nil {
					return err
				}
				if !dryRun {
					if _, err := st.AddSource(ctx, ns); err != nil {
						return fmt.Errorf("add %s: %w", f.Location, err)
					}
				}
				names[f.Name], tracked[f.Location] = true, f.Name
				report.Added = append(report.Added, f)
			}
			if asJSON {
				return writeJSON(a.stdout, report)
			}
			verb := "added"
			if dryRun {
				verb = "would add"
			}
			for _, f := range report.Added {
				fmt.Fprintf(a.stdout, "%s feed %q (%s)\n", verb, f.Name, f.Location)
			}
			for _, f := range report.Skipped {
				fmt.Fprintf(a.stdout, "skipped %s: %s\n", f.Location, f.Reason)
			}
			fmt.Fprintf(a.stdout, "%d %s, %d skipped\n", len(report.Added), verb, len(report.Skipped))
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&interval, "interval", 15*time.Minute, "how often to fetch each feed")
	f.IntVar(&budget, "retry-budget", 5, "attempts at one window before it goes terminal")
	f.BoolVar(&dryRun, "dry-run", false, "show what would be added; add nothing")
	f.BoolVar(&asJSON, "json", false, `print JSON: {"added": [...], "skipped": [...]}, each {name, location, reason}`)
	return cmd
}

func newSourceExportOPMLCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export-opml",
		Short: "Write the feed sources as an OPML 2.0 file (stdout, or --output)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			db, err := a.open(ctx)
			if err != nil {
				return err
			}
			srcs, err := db.Ingest().Sources(ctx)
			if err != nil {
				return err
			}
			doc := opmlDoc{Version: "2.0", Head: opmlHead{
				Title: "tidemark feeds", DateCreated: a.clk().Now().UTC().Format(time.RFC1123Z), Docs: "https://opml.org/spec2.opml",
			}}
			for _, s := range srcs {
				if s.Kind != "feed" {
					continue
				}
				doc.Body.Outlines = append(doc.Body.Outlines, opmlOutline{Text: s.Name, Title: s.Name, Type: "rss", XMLURL: s.Location})
			}
			out, err := xml.MarshalIndent(doc, "", "  ")
			if err != nil {
				return err
			}
			body := append([]byte(xml.Header), append(out, '\n')...)
			if output == "" || output == "-" {
				_, err = raw(a.stdout).Write(body)
				return err
			}
			return writeFileAtomic(output, body)
		},
	}
	cmd.Flags().StringVar(&output, "output", "", "write to this file instead of stdout")
	return cmd
}

// writeFileAtomic writes through a temporary file in the same directory,
// synced, renamed into place, then syncs the directory: a reader never
// sees half a file, and a crash after it returns does not lose it.
func writeFileAtomic(path string, body []byte) error {
	dir := filepath.Dir(path)
	fh, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := fh.Name()
	_, err = fh.Write(body)
	if err == nil {
		err = fh.Chmod(0o644) // CreateTemp's 0600 would hide the export from others
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
