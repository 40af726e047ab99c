-- 0027 (PostgreSQL): a word is a word wherever it stands. The default
-- parser of to_tsvector keeps what looks like an HTML tag out of the
-- document ("Option<String>" indexes only "option") and a file path or a
-- name with a dot as one token ("webhook.go"), so words SQLite's
-- unicode61 tokenizer finds were not found here. ASCII punctuation is read
-- as a space before parsing, as unicode61 reads it; queries are given the
-- same treatment (sqlstore's search).
ALTER TABLE page_search DROP COLUMN document;
ALTER TABLE page_search ADD COLUMN document tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', translate(title, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                ')), 'A') ||
    setweight(to_tsvector('simple', translate(summary, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                ')), 'B') ||
    setweight(to_tsvector('simple', translate(evidence, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                ')), 'C')) STORED;
CREATE INDEX page_search_document ON page_search USING GIN (document);
