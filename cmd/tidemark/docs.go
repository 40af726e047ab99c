package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/pipeline"
)

func newDocsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "docs", Short: "Typed documents: collections, import, get, put, delete, versions, field type changes",
		Long: `Documents live in collections with typed fields (text, number, boolean,
richtext, datetime). Every write is based on a version and mints a version
snapshot; a write based on an old version is refused. The built-in collection
"pages" holds the wiki's page documents (ID = the event's ID; fields title and
notes), which publication renders from. Writes are audited with who made them.`}
	var specs []string
	create := opCmd(a, "create NAME --field NAME:TYPE ...", "Create a collection with typed fields", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			c, err := p.CreateCollection(cmd.Context(), actor(), args[0], specs)
			return shownAs(c, said{c, func(w io.Writer) { fmt.Fprintf(w, "created collection %s\n", c.Name); _ = c.WriteText(w) }}, err)
		})
	create.Flags().StringArrayVar(&specs, "field", nil, "a field as NAME:TYPE (repeatable); TYPE is text, number, boolean, richtext or datetime")
	show := opCmd(a, "show NAME", "Show a collection: its fields, document count and unfinished migrations", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return shown(p.Collection(cmd.Context(), args[0]))
		})
	list := opCmd(a, "list", "List collections", cobra.NoArgs, func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		return shown(p.Collections(cmd.Context()))
	})
	coll := &cobra.Command{Use: "collection", Short: "Create, show and list collections"}
	coll.AddCommand(create, show, list)
	field := &cobra.Command{Use: "field", Short: "Change a field's type through a migration run"}
	field.AddCommand(newSetTypeCmd(a))
	cmd.AddCommand(coll, newDocsImportCmd(a), newDocsGetCmd(a), newDocsVersionsCmd(a), newDocsListCmd(a), newDocsPutCmd(a), newDocsDeleteCmd(a), field)
	return cmd
}

func newDocsImportCmd(a *app) *cobra.Command {
	return opCmd(a, "import NAME FILE.jsonl", `Create documents from JSON lines (one object of field values a line, optional "id"); all or nothing`, cobra.ExactArgs(2),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			r, err := openInput(args[1])
			if err != nil {
				return nil, err
			}
			defer r.Close()
			return shown(p.ImportDocuments(cmd.Context(), actor(), args[0], args[1], r))
		})
}

func newDocsGetCmd(a *app) *cobra.Command {
	return opCmd(a, "get NAME ID", "Show a document's current version", cobra.ExactArgs(2), func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		return shown(p.DocumentView(cmd.Context(), args[0], args[1]))
	})
}

func newDocsVersionsCmd(a *app) *cobra.Command {
	return opCmd(a, "versions NAME ID", "List a document's version snapshots, oldest first", cobra.ExactArgs(2),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return shown(p.DocumentVersions(cmd.Context(), args[0], args[1]))
		})
}

func newDocsListCmd(a *app) *cobra.Command {
	var after string
	var limit int
	cmd := opCmd(a, "list NAME", "List documents in ID order (page with --after)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return shown(p.Documents(cmd.Context(), args[0], after, limit))
		})
	cmd.Flags().StringVar(&after, "after", "", "only documents with an ID after this one")
	limitFlag(cmd.Flags(), &limit, 100, "at most this many")
	return cmd
}

func newDocsPutCmd(a *app) *cobra.Command {
	var jsonFields, textFields, unset []string
	var base int64
	cmd := opCmd(a, "put NAME [ID] --base-version N --field k=JSON --text k=STRING --unset k",
		"Create or update one document; an update names the version it is based on", cobra.RangeArgs(1, 2),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			put := content.Put{Unset: unset}
			if len(args) == 2 {
				if !cmd.Flags().Changed("base-version") {
					return nil, tidemark.Invalidf("--base-version", "", "a write to an existing document names the version it is based on (docs get shows it; 0 creates)")
				}
				put.ID, put.BaseVersion = args[1], base
			} else if base != 0 {
				return nil, tidemark.Invalidf("--base-version", fmt.Sprint(base), "an update names the document ID")
			}
			set, err := content.ParseAssignments(jsonFields, textFields)
			if err != nil {
				return nil, err
			}
			put.Set = set
			d, res, err := p.PutDocument(cmd.Context(), actor(), args[0], put)
			if res != nil {
				fmt.Fprintf(a.stderr, "republished page %s (generation %d)\n", res.PageID, res.Generation)
			}
			return sayShown(d, err, "%s/%s is at version %d", d.Collection, d.ID, d.Version)
		})
	cmd.Long = `Create or update one document. Without ID a document is created with a new
ULID. With ID, --base-version names the version the write is based on (the
version ` + "`docs get`" + ` shows); a write based on an old version is refused
(exit 4). --base-version 0 creates the document with that ID.

--field k=JSON sets a field to a JSON value (title='"Hi"', n=3, ok=true,
notes='[{"_type":"block","children":[{"_type":"span","text":"…"}]}]');
--text k=STRING sets it to a string without JSON quoting; --unset k removes it.`
	f := cmd.Flags()
	f.Int64Var(&base, "base-version", 0, "the version this write is based on (required with ID; 0 creates)")
	f.StringArrayVar(&jsonFields, "field", nil, "NAME=JSON (repeatable)")
	f.StringArrayVar(&textFields, "text", nil, "NAME=STRING (repeatable)")
	f.StringArrayVar(&unset, "unset", nil, "NAME to remove (repeatable)")
	return cmd
}

func newDocsDeleteCmd(a *app) *cobra.Command {
	var force bool
	cmd := opCmd(a, "delete NAME ID [--force]", "Delete a document (audited; its last fields are kept in the audit)", cobra.ExactArgs(2),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			act, res, err := p.DeleteDocument(cmd.Context(), actor(), args[0], args[1], force)
			if res != nil {
				fmt.Fprintf(a.stderr, "republished page %s without it (generation %d)\n", res.PageID, res.Generation)
			}
			return sayShown(act, err, "deleted %s/%s at version %d; its fields are kept in the audit", act.Collection, act.DocumentID, act.Version)
		})
	cmd.Long = `Delete a document. What would be lost beyond its current fields (which the
audit keeps) is refused without --force: its earlier versions, and for a page
document the title or notes its published page shows (the page is then
republished without them). No document is deleted while a migration of its
collection is unfinished.`
	cmd.Flags().BoolVar(&force, "force", false, "delete even what would lose earlier versions or a published page's title and notes")
	return cmd
}
