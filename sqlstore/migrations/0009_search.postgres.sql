-- 0009 (PostgreSQL): the title a page shows, an editor's override included,
-- and the one-line headline of its change, kept with its publication so
-- listings and feeds show them too; and
-- full-text search over published pages: titles (weight A), summaries (B)
-- and the readable text of their evidence (C), with a GIN index. The
-- 'simple' configuration does not stem: upstream text is in any language,
-- and it matches SQLite's unicode61 tokenizer.
ALTER TABLE pages ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE pages ADD COLUMN headline TEXT NOT NULL DEFAULT '';
-- The neighbours (older|newer page IDs) the published body links to, so
-- pages whose neighbours changed are found and republished.
ALTER TABLE pages ADD COLUMN neighbours TEXT NOT NULL DEFAULT '';
-- A change's neighbours are found by (occurred_at, id) within its source.
CREATE INDEX events_source_time_id ON events (source_id, occurred_at, id);

CREATE TABLE page_search (
    page_id  TEXT PRIMARY KEY REFERENCES pages(id),
    title    TEXT NOT NULL,
    summary  TEXT NOT NULL,
    evidence TEXT NOT NULL,
    document tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', title), 'A') ||
        setweight(to_tsvector('simple', summary), 'B') ||
        setweight(to_tsvector('simple', evidence), 'C')) STORED
);

CREATE INDEX page_search_document ON page_search USING GIN (document);
