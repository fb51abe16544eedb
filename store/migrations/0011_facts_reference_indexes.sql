-- Indexes on the columns that reference the fit-fact sets and classes (0009): SQLite
-- checks a foreign key on every delete of a parent row by looking its children up
-- (sqlite.org/foreignkeys.html, "Required and Suggested Database Indexes": without an
-- index on the child key, "a linear scan of the child table" per parent row). The
-- partial offers_current_facts and shapes_class_missing cannot serve that lookup, so a
-- reclassification (new fact rules: store/facts.go deletes every set and class) scanned
-- the offers table once per set and the shapes table once per class: 98 s of a 112 s
-- first refresh after an upgrade at 100k marketplace offers. Neither column changes on a
-- price update, so a refresh does not maintain them.
CREATE INDEX offers_facts_ref ON offers (facts_id);
CREATE INDEX shapes_class_ref ON shapes (class_id);
