-- 0024: the pages of a removed source leave the wiki at the next
-- publication. A source's removal deletes its pages' rows; the IDs of
-- those pages are recorded here in the same transaction, and a publishing
-- pass (or a sweep) deletes their objects from the store and then the
-- record. Page IDs are never reused, so a recorded page is never
-- published again.
CREATE TABLE page_removals (
    page_id    TEXT PRIMARY KEY,
    removed_at BIGINT NOT NULL
);
