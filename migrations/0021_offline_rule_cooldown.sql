-- The system rule `satellite_offline` was created with the column's default cooldown of 0, which
-- the rules API refuses (1 to 43200): saving the rule as the dashboard showed it failed. It is
-- raised once per outage, so its cooldown plays no part; give it the default of every rule.
UPDATE alert_rules SET cooldown_minutes = 30 WHERE system_key IS NOT NULL AND cooldown_minutes < 1;
