-- 0009 (SQLite): the title a page shows, an editor's override included, and
-- the one-line headline of its change, kept with its publication so
-- listings and feeds show them too; and full-text
-- search (FTS5) over published pages: titles, summaries and the readable
-- text of their evidence. page_search_rows maps a page to its FTS row, so a
-- republication replaces the page's row by rowid, not by a scan.
ALTER TABLE pages ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE pages ADD COLUMN headline TEXT NOT NULL DEFAULT '';
-- The neighbours (older|newer page IDs) the published body links to, so
-- pages whose neighbours changed are found and republished.
ALTER TABLE pages ADD COLUMN neighbours TEXT NOT NULL DEFAULT '';
-- A change's neighbours are found by (occurred_at, id) within its source.
CREATE INDEX events_source_time_id ON events (source_id, occurred_at, id);

CREATE TABLE page_search_rows (
    row     INTEGER PRIMARY KEY,
    page_id TEXT NOT NULL UNIQUE REFERENCES pages(id)
);

CREATE VIRTUAL TABLE page_search USING fts5(
    title, summary, evidence,
    tokenize = 'unicode61 remove_diacritics 2'
);
