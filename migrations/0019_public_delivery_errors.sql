-- Issue 34, finding 5: the reason a delivery failed used to quote the receiver's reply (up to 200
-- characters), a redirect's target or the system's error text, and every member of the team
-- reads it (the channel's delivery log, a scheduled export's lastError). Since this version the
-- stored reason is classified text only (the status code, "connection refused" ...) and the rest
-- goes to the hub's log. The reasons written before are cut down to that.
UPDATE alert_deliveries SET last_error = substr(last_error, 1, 8)
WHERE last_error GLOB 'HTTP [0-9][0-9][0-9][ :]*';
UPDATE alert_deliveries SET last_error = 'could not connect' WHERE last_error LIKE 'could not connect:%';
UPDATE alert_deliveries SET last_error = 'the request failed' WHERE last_error LIKE 'request failed:%';
UPDATE alert_deliveries SET last_error = 'invalid URL' WHERE last_error LIKE 'invalid request:%';

UPDATE scheduled_exports SET last_error = substr(last_error, 1, 8)
WHERE last_error GLOB 'HTTP [0-9][0-9][0-9][ :]*';
UPDATE scheduled_exports SET last_error = 'could not connect' WHERE last_error LIKE 'could not connect:%';
UPDATE scheduled_exports SET last_error = 'the request failed' WHERE last_error LIKE 'request failed:%';
UPDATE scheduled_exports SET last_error = 'invalid URL' WHERE last_error LIKE 'invalid request:%';
