-- 0035: a source's duplicate key, held by one source at a time.
--
-- source_key is what the kinds say makes two sources one (kinds.Set.Key: the kind,
-- the location in canonical form, and the config where the kind's config
-- selects other items), as a hex SHA-256. A unique index makes the database
-- refuse a second source of one key, so two concurrent `source add`s of one
-- location cannot both pass the check made before the insert.
--
-- Sources added before this migration keep a NULL key, which the index
-- leaves out (NULLs are distinct in a unique index, in SQLite and in
-- PostgreSQL alike): the canonical form is Go code that plain SQL cannot
-- repeat, and such a database may already hold two sources of one location
-- (added before the check existed), which must not fail the upgrade, nor
-- be deleted or renamed. The check before the insert still compares a new
-- source with them; only adds racing each other need the index, and those
-- are new.
ALTER TABLE sources ADD COLUMN source_key TEXT;

CREATE UNIQUE INDEX sources_source_key ON sources (source_key);
