-- A channel's message template (Go text/template over the change's title,
-- summary, link, source and page; outbox.ParseTemplate checks it when it is
-- set). Empty: the lane's provider kind's default template.
ALTER TABLE outbox_channels ADD COLUMN template TEXT NOT NULL DEFAULT '';
