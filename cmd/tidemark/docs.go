package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/sqlstore"
)

func (a *app) content(cmd *cobra.Command) (*sqlstore.ContentStore, error) {
	db, err := a.open(cmd.Context())
	if err != nil {
		return nil, err
	}
	return db.Content(), nil
}

func newDocsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "docs",
		Short: "Typed documents: collections, import, get, put, versions, field type changes",
		Long: `Documents live in collections with typed fields (text, number, boolean,
richtext, datetime). Every write is based on a version and mints a version
snapshot; a write based on an old version is refused. The built-in collection
"pages" holds the wiki's page documents (ID = the event's ID; fields title and
notes), which publication renders from.`,
	}
	coll := &cobra.Command{Use: "collection", Short: "Create, show and list collections"}
	coll.AddCommand(newCollectionCreateCmd(a), newCollectionShowCmd(a), newCollectionListCmd(a))
	field := &cobra.Command{Use: "field", Short: "Change a field's type through a migration run"}
	field.AddCommand(newSetTypeCmd(a))
	cmd.AddCommand(coll, newDocsImportCmd(a), newDocsGetCmd(a), newDocsVersionsCmd(a), newDocsListCmd(a), newDocsPutCmd(a), field)
	return cmd
}

func newCollectionCreateCmd(a *app) *cobra.Command {
	var (
		specs  []string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME --field NAME:TYPE ...",
		Short: "Create a collection with typed fields",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var fields []content.Field
			for _, s := range specs {
				f, err := content.ParseFieldSpec(s)
				if err != nil {
					return err
				}
				fields = append(fields, f)
			}
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			c, err := st.CreateCollection(cmd.Context(), args[0], fields)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, c)
			}
			fmt.Fprintf(a.stdout, "created collection %s\n", c.Name)
			printFields(a.stdout, c)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&specs, "field", nil, "a field as NAME:TYPE (repeatable); TYPE is text, number, boolean, richtext or datetime")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the collection as JSON")
	return cmd
}

// collectionView is `docs collection show --json`: the collection and its
// unfinished migration runs.
type collectionView struct {
	content.Collection
	Migrations []content.Run `json:"migrations"`
}

func newCollectionShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a collection: its fields, document count and unfinished migrations",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			c, err := st.Collection(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			runs, err := st.Runs(cmd.Context(), content.RunFilter{Collection: c.Name})
			if err != nil {
				return err
			}
			v := collectionView{Collection: c, Migrations: []content.Run{}}
			for _, r := range runs {
				if r.Status.Open() {
					v.Migrations = append(v.Migrations, r)
				}
			}
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			kind := ""
			if c.BuiltIn {
				kind = " (built in)"
			}
			fmt.Fprintf(a.stdout, "collection %s%s: %d documents, created %s\n", c.Name, kind, c.Documents, c.CreatedAt.Local().Format(time.DateTime))
			printFields(a.stdout, c)
			for _, r := range v.Migrations {
				fmt.Fprintf(a.stdout, "migration %s: %s %s→%s, %s, %d of %d walked\n", r.ID, r.Field, r.From, r.To, r.Status, r.Walked, r.Total)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the collection with its unfinished migrations")
	return cmd
}

func newCollectionListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List collections",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			cs, err := st.Collections(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, cs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "COLLECTION\tDOCUMENTS\tFIELDS")
			for _, c := range cs {
				var fs []string
				for _, f := range c.Fields {
					fs = append(fs, f.Name+":"+string(f.Type))
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\n", c.Name, c.Documents, strings.Join(fs, " "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: an array of collections")
	return cmd
}

func printFields(w io.Writer, c content.Collection) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE")
	for _, f := range c.Fields {
		fmt.Fprintf(tw, "%s\t%s\n", f.Name, f.Type)
	}
	tw.Flush()
}

// maxImportLine bounds one line of an import file.
const maxImportLine = content.MaxDocumentBytes + 1024

func newDocsImportCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import NAME FILE.jsonl",
		Short: "Create documents from JSON lines (one object of field values a line, optional \"id\"); all or nothing",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = os.Stdin
			if args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return tidemark.Invalidf("FILE", args[1], "%v", err)
				}
				defer f.Close()
				r = f
			}
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), maxImportLine)
			line := 0
			next := func() (content.Put, bool, error) {
				for sc.Scan() {
					line++
					b := bytes.TrimSpace(sc.Bytes())
					if len(b) == 0 {
						continue
					}
					p, err := parseImportLine(b)
					if err != nil {
						return p, false, fmt.Errorf("%s line %d: %w", args[1], line, err)
					}
					return p, true, nil
				}
				if err := sc.Err(); err != nil {
					return content.Put{}, false, tidemark.Invalidf(fmt.Sprintf("%s line %d", args[1], line+1), "", "%v (at most %d bytes a line)", err, maxImportLine)
				}
				return content.Put{}, false, nil
			}
			n, err := st.Import(cmd.Context(), args[0], next)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"collection": args[0], "imported": n})
			}
			fmt.Fprintf(a.stdout, "imported %d documents into %s\n", n, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print JSON: {"collection", "imported"}`)
	return cmd
}

func parseImportLine(b []byte) (content.Put, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return content.Put{}, tidemark.Invalidf("line", string(b), "want one JSON object of field values: %v", err)
	}
	p := content.Put{Set: content.Fields{}}
	for k, v := range obj {
		if k == "id" {
			if err := json.Unmarshal(v, &p.ID); err != nil {
				return p, tidemark.Invalidf("id", string(v), "want a string ULID")
			}
			continue
		}
		p.Set[k] = v
	}
	return p, nil
}

func newDocsGetCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get NAME ID",
		Short: "Show a document's current version",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			d, err := st.Document(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, d)
			}
			c, err := st.Collection(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s/%s version %d, updated %s\n", d.Collection, d.ID, d.Version, d.UpdatedAt.Local().Format(time.DateTime))
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			for _, f := range c.Fields {
				v, ok := d.Fields[f.Name]
				s := "-"
				if ok {
					s = string(v)
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Name, f.Type, s)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the document as JSON")
	return cmd
}

func newDocsVersionsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "versions NAME ID",
		Short: "List a document's version snapshots, oldest first",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			vs, err := st.Versions(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if asJSON {
				if vs == nil {
					vs = []content.Version{}
				}
				return writeJSON(a.stdout, vs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tREASON\tRUN\tAT\tFIELDS")
			for _, v := range vs {
				b, _ := json.Marshal(v.Fields)
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", v.Version, v.Reason, orDash(v.RunID), v.At.Local().Format(time.DateTime), short(string(b), 80))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: an array of versions")
	return cmd
}

func newDocsListCmd(a *app) *cobra.Command {
	var (
		after  string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list NAME",
		Short: "List documents in ID order (page with --after)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.content(cmd)
			if err != nil {
				return err
			}
			docs, err := st.Documents(cmd.Context(), args[0], after, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, docs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tVERSION\tFIELDS")
			for _, d := range docs {
				b, _ := json.Marshal(d.Fields)
				fmt.Fprintf(tw, "%s\t%d\t%s\n", d.ID, d.Version, short(string(b), 100))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&after, "after", "", "only documents with an ID after this one")
	limitFlag(cmd.Flags(), &limit, 100, "at most this many")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: an array of documents")
	return cmd
}

func newDocsPutCmd(a *app) *cobra.Command {
	var (
		jsonFields, textFields, unset []string
		base                          int64
		asJSON                        bool
	)
	cmd := &cobra.Command{
		Use:   "put NAME [ID] --base-version N --field k=JSON --text k=STRING --unset k",
		Short: "Create or update one document; an update names the version it is based on",
		Long: `Create or update one document. Without ID a document is created with a new
ULID. With ID, --base-version names the version the write is based on (the
version ` + "`docs get`" + ` shows); a write based on an old version is refused
(exit 4). --base-version 0 creates the document with that ID.

--field k=JSON sets a field to a JSON value (title='"Hi"', n=3, ok=true,
notes='[{"_type":"block","children":[{"_type":"span","text":"…"}]}]');
--text k=STRING sets it to a string without JSON quoting; --unset k removes it.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := content.Put{Set: content.Fields{}, Unset: unset}
			if len(args) == 2 {
				p.ID = args[1]
				if !cmd.Flags().Changed("base-version") {
					return tidemark.Invalidf("--base-version", "", "a write to an existing document names the version it is based on (docs get shows it; 0 creates)")
				}
				p.BaseVersion = base
			} else if base != 0 {
				return tidemark.Invalidf("--base-version", fmt.Sprint(base), "an update names the document ID")
			}
			for _, kv := range jsonFields {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || !json.Valid([]byte(v)) {
					return tidemark.Invalidf("--field", kv, `want NAME=JSON, e.g. n=3 or title='"Hello"'`)
				}
				p.Set[k] = json.RawMessage(v)
			}
			for _, kv := range textFields {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return tidemark.Invalidf("--text", kv, "want NAME=STRING")
				}
				b, _ := json.Marshal(v)
				p.Set[k] = b
			}
			if len(p.Set) == 0 && len(p.Unset) == 0 {
				return tidemark.Invalidf("fields", "", "nothing to write: give --field, --text or --unset")
			}
			pl, err := a.pipe(cmd.Context())
			if err != nil {
				return err
			}
			d, res, err := pl.PutDocument(cmd.Context(), args[0], p)
			if err != nil {
				return err
			}
			if res != nil {
				fmt.Fprintf(a.stderr, "republished page %s (generation %d)\n", res.PageID, res.Generation)
			}
			if asJSON {
				return writeJSON(a.stdout, d)
			}
			fmt.Fprintf(a.stdout, "%s/%s is at version %d\n", d.Collection, d.ID, d.Version)
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&base, "base-version", 0, "the version this write is based on (required with ID; 0 creates)")
	f.StringArrayVar(&jsonFields, "field", nil, "NAME=JSON (repeatable)")
	f.StringArrayVar(&textFields, "text", nil, "NAME=STRING (repeatable)")
	f.StringArrayVar(&unset, "unset", nil, "NAME to remove (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the written document as JSON")
	return cmd
}
