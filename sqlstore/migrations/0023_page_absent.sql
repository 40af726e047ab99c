-- Whether a published page's object is missing from the object store, as
-- far as the books know: set by the sweep, which lists the store, for each
-- page it found missing and could not republish, and for every published
-- page when the wiki is rebound to another store; cleared when the page is
-- marked published again (its read-back proved the object) or withdrawn.
-- A publishing pass leaves absent pages out of the listings it writes
-- without listing every page object in the store.

ALTER TABLE pages ADD COLUMN absent INTEGER NOT NULL DEFAULT 0;

CREATE INDEX pages_absent ON pages (id) WHERE absent = 1;
