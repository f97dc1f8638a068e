-- spade-envs registry schema version 3 (postgresql), frozen for the migration test.
-- Generated from spade_envs/registry/tables.py as it was at schema version 3.

CREATE TABLE documents (
	id SERIAL NOT NULL, 
	sha256 VARCHAR(64) NOT NULL, 
	source VARCHAR(512) NOT NULL, 
	text TEXT NOT NULL, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (id)
);

CREATE UNIQUE INDEX ix_documents_sha256 ON documents (sha256);

CREATE TABLE runs (
	id VARCHAR(64) NOT NULL, 
	kind VARCHAR(32) NOT NULL, 
	config_json TEXT NOT NULL, 
	started_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	finished_at TIMESTAMP WITH TIME ZONE, 
	PRIMARY KEY (id)
);

CREATE TABLE spade_schema (
	id INTEGER NOT NULL, 
	version INTEGER NOT NULL, 
	PRIMARY KEY (id)
);

CREATE TABLE environments (
	id SERIAL NOT NULL, 
	name VARCHAR(64) NOT NULL, 
	version INTEGER NOT NULL, 
	sha256 VARCHAR(64) NOT NULL, 
	source TEXT NOT NULL, 
	class_name VARCHAR(128) NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	skill VARCHAR(64) NOT NULL, 
	description TEXT NOT NULL, 
	max_turns INTEGER NOT NULL, 
	origin VARCHAR(16) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	parents_json TEXT NOT NULL, 
	document_id INTEGER, 
	model VARCHAR(256) NOT NULL, 
	run_id VARCHAR(64), 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	prompt_sha256 VARCHAR(64) NOT NULL, 
	hint TEXT DEFAULT '' NOT NULL, 
	extra_json TEXT DEFAULT '{}' NOT NULL, 
	suite VARCHAR(32) NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_environment_version UNIQUE (name, version), 
	FOREIGN KEY(document_id) REFERENCES documents (id), 
	FOREIGN KEY(run_id) REFERENCES runs (id)
);

CREATE INDEX ix_environments_created_at ON environments (created_at);

CREATE INDEX ix_environments_kind ON environments (kind);

CREATE INDEX ix_environments_name ON environments (name);

CREATE INDEX ix_environments_origin ON environments (origin);

CREATE UNIQUE INDEX ix_environments_sha256 ON environments (sha256);

CREATE INDEX ix_environments_skill ON environments (skill);

CREATE INDEX ix_environments_status ON environments (status);

CREATE INDEX ix_environments_suite ON environments (suite);

CREATE TABLE embeddings (
	id SERIAL NOT NULL, 
	environment_id INTEGER NOT NULL, 
	model VARCHAR(256) NOT NULL, 
	dim INTEGER NOT NULL, 
	vector BYTEA NOT NULL, 
	text_sha256 VARCHAR(64) NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_embedding UNIQUE (environment_id, model), 
	FOREIGN KEY(environment_id) REFERENCES environments (id)
);

CREATE INDEX ix_embeddings_environment_id ON embeddings (environment_id);

CREATE TABLE play_stats (
	id SERIAL NOT NULL, 
	environment_id INTEGER NOT NULL, 
	checkpoint VARCHAR(256) NOT NULL, 
	plays_with_hint INTEGER NOT NULL, 
	plays_without_hint INTEGER NOT NULL, 
	mean_return_with_hint FLOAT NOT NULL, 
	mean_return_without_hint FLOAT NOT NULL, 
	win_rate FLOAT NOT NULL, 
	regret FLOAT NOT NULL, 
	updated_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_play_stats UNIQUE (environment_id, checkpoint), 
	FOREIGN KEY(environment_id) REFERENCES environments (id)
);

CREATE INDEX ix_play_stats_environment_id ON play_stats (environment_id);

CREATE INDEX ix_play_stats_regret ON play_stats (regret);

CREATE TABLE validation_reports (
	id SERIAL NOT NULL, 
	environment_id INTEGER NOT NULL, 
	passed BOOLEAN NOT NULL, 
	budget VARCHAR(16) NOT NULL, 
	validator_version VARCHAR(16) NOT NULL, 
	report_json TEXT NOT NULL, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	duration_s FLOAT NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(environment_id) REFERENCES environments (id)
);

CREATE INDEX ix_validation_reports_environment_id ON validation_reports (environment_id);

INSERT INTO spade_schema (id, version) VALUES (1, 3);
