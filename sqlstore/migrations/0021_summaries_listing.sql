-- The summaries are listed newest first, a page at a time (the console's
-- publish page, GET /api/summaries, tidemark publish summaries): an index
-- in that order serves each page without sorting the whole table.

CREATE INDEX summaries_listing ON summaries (created_at, id);
