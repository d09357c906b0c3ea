-- Scheduled exports (SPEC 2.17, 4.7): a team's export file made on a cron schedule and sent to
-- one of its alert channels through the alert delivery outbox.

-- The table was laid out in the first migration; a schedule also needs its zone and the outbox
-- row of its last run. `cron` holds five fields as the user wrote them, evaluated in `timezone`
-- (an IANA name). `channel_id` goes NULL when the channel is deleted: the runs then fail and say
-- so. `next_run_at` moves, at each run, to the first time after that run, so a hub that was down
-- across several times runs a missed schedule once. `last_status`: sending (in the outbox,
-- perhaps retrying), delivered, failed (render, outbox or delivery).
ALTER TABLE scheduled_exports ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE scheduled_exports ADD COLUMN last_delivery_id TEXT;
CREATE INDEX scheduled_exports_tenant ON scheduled_exports(tenant_id, name);
CREATE INDEX scheduled_exports_delivery ON scheduled_exports(last_delivery_id) WHERE last_delivery_id IS NOT NULL;

-- An outbox row that carries a file: its name (the mail attachment's, the webhook's
-- Content-Disposition). NULL for alert notifications, which behave as before.
ALTER TABLE alert_deliveries ADD COLUMN file_name TEXT;

-- Each attempt's outcome on an export's delivery becomes the export's last status, so the
-- status stays true after the outbox prunes the row.
CREATE TRIGGER scheduled_export_delivery_outcome AFTER UPDATE OF status ON alert_deliveries
WHEN NEW.file_name IS NOT NULL
BEGIN
    UPDATE scheduled_exports
    SET last_status = CASE NEW.status WHEN 'delivered' THEN 'delivered' WHEN 'failed' THEN 'failed' ELSE 'sending' END,
        last_error = NEW.last_error
    WHERE last_delivery_id = NEW.id;
END;
