-- 0025: every publishing pass asks which published pages must be
-- withdrawn (their event has no current summary any more): a few rows,
-- found by this index instead of a scan of every page.
CREATE INDEX pages_withdrawing ON pages (id) WHERE summary_id IS NULL AND published_summary_id IS NOT NULL;
