-- The page format a page was published in: the digest of the change
-- page's template (its style included) and of the rendering code's format
-- version. A page published in another format than the release's is
-- republished by the next pass or sweep, so a release that changes how a
-- change page looks changes every page, not only the new ones. Pages
-- published before this column existed have none, and are republished
-- once.

ALTER TABLE pages ADD COLUMN published_format TEXT NOT NULL DEFAULT '';
