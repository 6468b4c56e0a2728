-- 0004_preview: whether the change was previewed in a private view first (JSON: {"used": true}
-- or {"used": false, "reason": "..."}), and the probe of the live venv after a previewed change
-- was applied (--probe-live; the probe column holds the probe of the preview).
ALTER TABLE transactions ADD COLUMN preview TEXT;
ALTER TABLE transactions ADD COLUMN live_probe TEXT;
