-- A firm's own limits for agents, per credential: writes per write window and reads per minute. A missing row or a
-- null keeps the deployment's default (AGENT_WRITE_BUDGET, AGENT_READ_LIMIT).
CREATE TABLE "agent_limits" (
  "firm_id" uuid PRIMARY KEY NOT NULL REFERENCES "firms"("id"),
  "write_budget" integer,
  "read_limit" integer,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT "agent_limits_write_budget" CHECK ("write_budget" is null or "write_budget" between 1 and 1000000),
  CONSTRAINT "agent_limits_read_limit" CHECK ("read_limit" is null or "read_limit" between 1 and 1000000)
);
