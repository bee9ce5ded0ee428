-- RFC 8707 resource indicators: an approval is bound to the resource it was asked for (the MCP endpoint, the API),
-- and every token of its family is accepted only there. Null: the API as a whole (approvals that named none).
ALTER TABLE "oauth_grants" ADD COLUMN "resource" text;
