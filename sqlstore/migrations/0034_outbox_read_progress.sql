-- 0034: how far a reconciliation's read of a lane's own writes got when it
-- stopped part-way (the provider asked it to wait, or a page failed), so
-- that the next pass goes on from there rather than from the listing's
-- head (outbox.ReadProgress): a listing longer than a rate limit allows in
-- one pass is still read to its end.
--
-- read_key names the read (what the listing reads, how far back, and the
-- writes in doubt it is to decide); a pass whose read has another key
-- drops the row and reads from the head. cursor is the next page to read;
-- listing is the JSON of what the pages read so far showed (the own
-- writes, the oldest page's snapshot time and its evidence, the pages
-- read, the latest horizon). A recorded reconciliation deletes the row,
-- and so does removing the lane.
CREATE TABLE outbox_read_progress (
    lane     TEXT PRIMARY KEY REFERENCES outbox_lanes (name),
    read_key TEXT NOT NULL,
    cursor   TEXT NOT NULL,
    listing  TEXT NOT NULL,
    kept_at  BIGINT NOT NULL
);
