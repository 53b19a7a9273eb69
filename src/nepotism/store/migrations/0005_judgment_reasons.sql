-- Why a judgment has no verdict, and what a label verdict rests on (records.Judgment):
-- `reason` (one of records.UNPARSED_REASONS, or a failed call's error class; NULL when parsed or
-- unknown), `label_mass` (the labels' total next-token probability), `label_logprobs` and
-- `label_top_k` (JSON objects keyed by the label shown to the model) and `warnings` (a JSON list
-- of the backend's warnings). Rows stored before this migration keep NULL in all of them.
ALTER TABLE judgments ADD COLUMN reason TEXT;
ALTER TABLE judgments ADD COLUMN label_mass REAL;
ALTER TABLE judgments ADD COLUMN label_logprobs TEXT;
ALTER TABLE judgments ADD COLUMN label_top_k TEXT;
ALTER TABLE judgments ADD COLUMN warnings TEXT;
