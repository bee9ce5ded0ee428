-- Every table of an organization is keyed by organization_id, every table of the firm's by firm_id: primary keys,
-- unique keys and the foreign keys between them carry the tenant, so each group could be distributed by its column
-- (Citus) as packages/db/src/distribution.ts places them. Data is kept; test/distribution.test.ts checks the result.
-- Foreign keys that name a key about to be rebuilt are dropped first and added again at the end.
ALTER TABLE attachment_links DROP CONSTRAINT attachment_links_entry_fk;
--> statement-breakpoint
ALTER TABLE attachment_links DROP CONSTRAINT attachment_links_document_fk;
--> statement-breakpoint
ALTER TABLE attachment_links DROP CONSTRAINT attachment_links_contact_fk;
--> statement-breakpoint
ALTER TABLE attachment_links DROP CONSTRAINT attachment_links_bank_transaction_fk;
--> statement-breakpoint
ALTER TABLE attachment_links DROP CONSTRAINT attachment_links_reconciliation_fk;
--> statement-breakpoint
ALTER TABLE account_daily_balances DROP CONSTRAINT account_daily_balances_account_fk;
--> statement-breakpoint
ALTER TABLE account_monthly_balances DROP CONSTRAINT account_monthly_balances_account_fk;
--> statement-breakpoint
ALTER TABLE account_yearly_balances DROP CONSTRAINT account_yearly_balances_account_fk;
--> statement-breakpoint
ALTER TABLE bank_accounts DROP CONSTRAINT bank_accounts_account_fk;
--> statement-breakpoint
ALTER TABLE bank_accounts DROP CONSTRAINT bank_accounts_feed_connection_fk;
--> statement-breakpoint
ALTER TABLE bank_transaction_lines DROP CONSTRAINT bank_transaction_lines_account_fk;
--> statement-breakpoint
ALTER TABLE bank_transaction_lines DROP CONSTRAINT bank_transaction_lines_document_fk;
--> statement-breakpoint
ALTER TABLE bank_transaction_lines DROP CONSTRAINT bank_transaction_lines_payment_fk;
--> statement-breakpoint
ALTER TABLE bank_transaction_lines DROP CONSTRAINT bank_transaction_lines_tax_rate_fk;
--> statement-breakpoint
ALTER TABLE bank_transaction_lines DROP CONSTRAINT bank_transaction_lines_transaction_fk;
--> statement-breakpoint
ALTER TABLE bank_transactions DROP CONSTRAINT bank_transactions_bank_account_fk;
--> statement-breakpoint
ALTER TABLE bank_transactions DROP CONSTRAINT bank_transactions_contact_fk;
--> statement-breakpoint
ALTER TABLE bank_transactions DROP CONSTRAINT bank_transactions_journal_entry_fk;
--> statement-breakpoint
ALTER TABLE bank_transactions DROP CONSTRAINT bank_transactions_reconciliation_fk;
--> statement-breakpoint
ALTER TABLE bank_transactions DROP CONSTRAINT bank_transactions_tax_rate_fk;
--> statement-breakpoint
ALTER TABLE document_allocations DROP CONSTRAINT document_allocations_payment_fk;
--> statement-breakpoint
ALTER TABLE document_allocations DROP CONSTRAINT document_allocations_target_fk;
--> statement-breakpoint
ALTER TABLE document_lines DROP CONSTRAINT document_lines_account_fk;
--> statement-breakpoint
ALTER TABLE document_lines DROP CONSTRAINT document_lines_document_fk;
--> statement-breakpoint
ALTER TABLE document_lines DROP CONSTRAINT document_lines_item_fk;
--> statement-breakpoint
ALTER TABLE document_lines DROP CONSTRAINT document_lines_tax_rate_fk;
--> statement-breakpoint
ALTER TABLE documents DROP CONSTRAINT documents_bank_account_fk;
--> statement-breakpoint
ALTER TABLE documents DROP CONSTRAINT documents_contact_fk;
--> statement-breakpoint
ALTER TABLE documents DROP CONSTRAINT documents_control_account_fk;
--> statement-breakpoint
ALTER TABLE documents DROP CONSTRAINT documents_estimate_fk;
--> statement-breakpoint
ALTER TABLE documents DROP CONSTRAINT documents_invoice_fk;
--> statement-breakpoint
ALTER TABLE documents DROP CONSTRAINT documents_journal_entry_fk;
--> statement-breakpoint
ALTER TABLE import_row_errors DROP CONSTRAINT import_row_errors_import_fk;
--> statement-breakpoint
ALTER TABLE import_rows DROP CONSTRAINT import_rows_import_fk;
--> statement-breakpoint
ALTER TABLE items DROP CONSTRAINT items_expense_account_fk;
--> statement-breakpoint
ALTER TABLE items DROP CONSTRAINT items_income_account_fk;
--> statement-breakpoint
ALTER TABLE journal_entries DROP CONSTRAINT journal_entries_import_fk;
--> statement-breakpoint
ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_account_fk;
--> statement-breakpoint
ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_entry_fk;
--> statement-breakpoint
ALTER TABLE reconciliations DROP CONSTRAINT reconciliations_adjustment_entry_fk;
--> statement-breakpoint
ALTER TABLE reconciliations DROP CONSTRAINT reconciliations_bank_account_fk;
--> statement-breakpoint
ALTER TABLE scheduled_entry_runs DROP CONSTRAINT scheduled_entry_runs_schedule_fk;
--> statement-breakpoint
ALTER TABLE tax_rates DROP CONSTRAINT tax_rates_liability_account_fk;
--> statement-breakpoint
ALTER TABLE "close_signoffs" DROP CONSTRAINT "close_signoffs_close_id_fkey";
--> statement-breakpoint
ALTER TABLE "close_comments" DROP CONSTRAINT "close_comments_close_id_fkey";
--> statement-breakpoint
ALTER TABLE "close_evidence" DROP CONSTRAINT "close_evidence_close_id_fkey";
--> statement-breakpoint
ALTER TABLE "scheduled_entry_runs" DROP CONSTRAINT "scheduled_entry_runs_journal_entry_id_fkey";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_subscription_id_webhook_subscriptions_id_fk";
--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "webhook_delivery_attempts_delivery_id_webhook_deliveries_id_fk";
--> statement-breakpoint
-- An attempt carries its delivery's firm, taken from the delivery.
ALTER TABLE "webhook_delivery_attempts" ADD COLUMN "firm_id" uuid;
--> statement-breakpoint
UPDATE "webhook_delivery_attempts" a SET "firm_id" = d."firm_id" FROM "webhook_deliveries" d WHERE d."id" = a."delivery_id";
--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "firm_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_firm_id_firms_id_fk" FOREIGN KEY ("firm_id") REFERENCES "firms"("id");
--> statement-breakpoint
-- Sessions, invitations and OAuth codes and tokens carry their firm, taken from their user or grant: global tables
-- today (looked up by a secret's hash before the firm is known), ready to join the firm's group once their secrets
-- name it.
ALTER TABLE "user_sessions" ADD COLUMN "firm_id" uuid;
--> statement-breakpoint
UPDATE "user_sessions" x SET "firm_id" = p."firm_id" FROM "users" p WHERE p."id" = x."user_id";
--> statement-breakpoint
ALTER TABLE "user_sessions" ALTER COLUMN "firm_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "user_sessions" ADD CONSTRAINT "user_sessions_firm_id_firms_id_fk" FOREIGN KEY ("firm_id") REFERENCES "firms"("id");
--> statement-breakpoint
ALTER TABLE "user_invitations" ADD COLUMN "firm_id" uuid;
--> statement-breakpoint
UPDATE "user_invitations" x SET "firm_id" = p."firm_id" FROM "users" p WHERE p."id" = x."user_id";
--> statement-breakpoint
ALTER TABLE "user_invitations" ALTER COLUMN "firm_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "user_invitations" ADD CONSTRAINT "user_invitations_firm_id_firms_id_fk" FOREIGN KEY ("firm_id") REFERENCES "firms"("id");
--> statement-breakpoint
ALTER TABLE "oauth_codes" ADD COLUMN "firm_id" uuid;
--> statement-breakpoint
UPDATE "oauth_codes" x SET "firm_id" = p."firm_id" FROM "oauth_grants" p WHERE p."id" = x."grant_id";
--> statement-breakpoint
ALTER TABLE "oauth_codes" ALTER COLUMN "firm_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "oauth_codes" ADD CONSTRAINT "oauth_codes_firm_id_firms_id_fk" FOREIGN KEY ("firm_id") REFERENCES "firms"("id");
--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD COLUMN "firm_id" uuid;
--> statement-breakpoint
UPDATE "oauth_tokens" x SET "firm_id" = p."firm_id" FROM "oauth_grants" p WHERE p."id" = x."grant_id";
--> statement-breakpoint
ALTER TABLE "oauth_tokens" ALTER COLUMN "firm_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD CONSTRAINT "oauth_tokens_firm_id_firms_id_fk" FOREIGN KEY ("firm_id") REFERENCES "firms"("id");
--> statement-breakpoint
-- Primary keys: (organization_id, id), which also replaces the unique (organization_id, id) the composite foreign
-- keys named.
ALTER TABLE "accounts" DROP CONSTRAINT "accounts_pkey";
--> statement-breakpoint
ALTER TABLE "accounts" DROP CONSTRAINT "accounts_org_id_key";
--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "journal_entries" DROP CONSTRAINT "journal_entries_pkey";
--> statement-breakpoint
ALTER TABLE "journal_entries" DROP CONSTRAINT "journal_entries_org_id_key";
--> statement-breakpoint
ALTER TABLE "journal_entries" ADD CONSTRAINT "journal_entries_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "contacts" DROP CONSTRAINT "contacts_pkey";
--> statement-breakpoint
ALTER TABLE "contacts" DROP CONSTRAINT "contacts_org_id_key";
--> statement-breakpoint
ALTER TABLE "contacts" ADD CONSTRAINT "contacts_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "items" DROP CONSTRAINT "items_pkey";
--> statement-breakpoint
ALTER TABLE "items" DROP CONSTRAINT "items_org_id_key";
--> statement-breakpoint
ALTER TABLE "items" ADD CONSTRAINT "items_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "tax_rates" DROP CONSTRAINT "tax_rates_pkey";
--> statement-breakpoint
ALTER TABLE "tax_rates" DROP CONSTRAINT "tax_rates_org_id_key";
--> statement-breakpoint
ALTER TABLE "tax_rates" ADD CONSTRAINT "tax_rates_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "documents" DROP CONSTRAINT "documents_pkey";
--> statement-breakpoint
ALTER TABLE "documents" DROP CONSTRAINT "documents_org_id_key";
--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "bank_feed_connections" DROP CONSTRAINT "bank_feed_connections_pkey";
--> statement-breakpoint
ALTER TABLE "bank_feed_connections" DROP CONSTRAINT "bank_feed_connections_org_id_key";
--> statement-breakpoint
ALTER TABLE "bank_feed_connections" ADD CONSTRAINT "bank_feed_connections_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "bank_accounts" DROP CONSTRAINT "bank_accounts_pkey";
--> statement-breakpoint
ALTER TABLE "bank_accounts" DROP CONSTRAINT "bank_accounts_org_id_key";
--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD CONSTRAINT "bank_accounts_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "reconciliations" DROP CONSTRAINT "reconciliations_pkey";
--> statement-breakpoint
ALTER TABLE "reconciliations" DROP CONSTRAINT "reconciliations_org_id_key";
--> statement-breakpoint
ALTER TABLE "reconciliations" ADD CONSTRAINT "reconciliations_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "bank_transactions" DROP CONSTRAINT "bank_transactions_pkey";
--> statement-breakpoint
ALTER TABLE "bank_transactions" DROP CONSTRAINT "bank_transactions_org_id_key";
--> statement-breakpoint
ALTER TABLE "bank_transactions" ADD CONSTRAINT "bank_transactions_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "scheduled_journal_entries" DROP CONSTRAINT "scheduled_journal_entries_pkey";
--> statement-breakpoint
ALTER TABLE "scheduled_journal_entries" DROP CONSTRAINT "scheduled_journal_entries_org_id_key";
--> statement-breakpoint
ALTER TABLE "scheduled_journal_entries" ADD CONSTRAINT "scheduled_journal_entries_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "imports" DROP CONSTRAINT "imports_pkey";
--> statement-breakpoint
ALTER TABLE "imports" DROP CONSTRAINT "imports_org_id_key";
--> statement-breakpoint
ALTER TABLE "imports" ADD CONSTRAINT "imports_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "journal_lines" DROP CONSTRAINT "journal_lines_pkey";
--> statement-breakpoint
ALTER TABLE "journal_lines" ADD CONSTRAINT "journal_lines_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "document_lines" DROP CONSTRAINT "document_lines_pkey";
--> statement-breakpoint
ALTER TABLE "document_lines" ADD CONSTRAINT "document_lines_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "document_allocations" DROP CONSTRAINT "document_allocations_pkey";
--> statement-breakpoint
ALTER TABLE "document_allocations" ADD CONSTRAINT "document_allocations_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "bank_transaction_lines" DROP CONSTRAINT "bank_transaction_lines_pkey";
--> statement-breakpoint
ALTER TABLE "bank_transaction_lines" ADD CONSTRAINT "bank_transaction_lines_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "scheduled_entry_runs" DROP CONSTRAINT "scheduled_entry_runs_pkey";
--> statement-breakpoint
ALTER TABLE "scheduled_entry_runs" ADD CONSTRAINT "scheduled_entry_runs_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "outbox_events" DROP CONSTRAINT "outbox_events_pkey";
--> statement-breakpoint
ALTER TABLE "outbox_events" ADD CONSTRAINT "outbox_events_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "agent_proposals" DROP CONSTRAINT "agent_proposals_pkey";
--> statement-breakpoint
ALTER TABLE "agent_proposals" ADD CONSTRAINT "agent_proposals_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "closes" DROP CONSTRAINT "closes_pkey";
--> statement-breakpoint
ALTER TABLE "closes" ADD CONSTRAINT "closes_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "close_comments" DROP CONSTRAINT "close_comments_pkey";
--> statement-breakpoint
ALTER TABLE "close_comments" ADD CONSTRAINT "close_comments_pkey" PRIMARY KEY ("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "import_rows" DROP CONSTRAINT "import_rows_pkey";
--> statement-breakpoint
ALTER TABLE "import_rows" ADD CONSTRAINT "import_rows_pkey" PRIMARY KEY ("organization_id", "import_id", "entry_no", "line_no");
--> statement-breakpoint
ALTER TABLE "import_row_errors" DROP CONSTRAINT "import_row_errors_pkey";
--> statement-breakpoint
ALTER TABLE "import_row_errors" ADD CONSTRAINT "import_row_errors_pkey" PRIMARY KEY ("organization_id", "import_id", "seq");
--> statement-breakpoint
ALTER TABLE "close_signoffs" DROP CONSTRAINT "close_signoffs_pkey";
--> statement-breakpoint
ALTER TABLE "close_signoffs" ADD CONSTRAINT "close_signoffs_pkey" PRIMARY KEY ("organization_id", "close_id", "item_key");
--> statement-breakpoint
ALTER TABLE "close_evidence" DROP CONSTRAINT "close_evidence_pkey";
--> statement-breakpoint
ALTER TABLE "close_evidence" ADD CONSTRAINT "close_evidence_pkey" PRIMARY KEY ("organization_id", "close_id", "name");
--> statement-breakpoint
-- The firm's tables: (firm_id, id).
ALTER TABLE "audit_events" DROP CONSTRAINT "audit_events_pkey";
--> statement-breakpoint
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_pkey" PRIMARY KEY ("firm_id", "id");
--> statement-breakpoint
ALTER TABLE "agent_audit_events" DROP CONSTRAINT "agent_audit_events_pkey";
--> statement-breakpoint
ALTER TABLE "agent_audit_events" ADD CONSTRAINT "agent_audit_events_pkey" PRIMARY KEY ("firm_id", "id");
--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" DROP CONSTRAINT "webhook_subscriptions_pkey";
--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_pkey" PRIMARY KEY ("firm_id", "id");
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_pkey";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("firm_id", "id");
--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "webhook_delivery_attempts_pkey";
--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_pkey" PRIMARY KEY ("firm_id", "id");
--> statement-breakpoint
-- Unique constraints and indexes name their tenant too.
ALTER TABLE "journal_lines" DROP CONSTRAINT "journal_lines_entry_line_key";
--> statement-breakpoint
ALTER TABLE "journal_lines" ADD CONSTRAINT "journal_lines_entry_line_key" UNIQUE ("organization_id", "entry_id", "line_no");
--> statement-breakpoint
ALTER TABLE "document_lines" DROP CONSTRAINT "document_lines_document_line_key";
--> statement-breakpoint
ALTER TABLE "document_lines" ADD CONSTRAINT "document_lines_document_line_key" UNIQUE ("organization_id", "document_id", "line_no");
--> statement-breakpoint
ALTER TABLE "document_allocations" DROP CONSTRAINT "document_allocations_payment_target_key";
--> statement-breakpoint
ALTER TABLE "document_allocations" ADD CONSTRAINT "document_allocations_payment_target_key" UNIQUE ("organization_id", "payment_id", "target_id");
--> statement-breakpoint
ALTER TABLE "bank_transaction_lines" DROP CONSTRAINT "bank_transaction_lines_line_key";
--> statement-breakpoint
ALTER TABLE "bank_transaction_lines" ADD CONSTRAINT "bank_transaction_lines_line_key" UNIQUE ("organization_id", "bank_transaction_id", "line_no");
--> statement-breakpoint
ALTER TABLE "scheduled_entry_runs" DROP CONSTRAINT "scheduled_entry_runs_occurrence_key";
--> statement-breakpoint
ALTER TABLE "scheduled_entry_runs" ADD CONSTRAINT "scheduled_entry_runs_occurrence_key" UNIQUE ("organization_id", "schedule_id", "occurrence");
--> statement-breakpoint
ALTER TABLE "bank_feed_connections" DROP CONSTRAINT "bank_feed_connections_item_key";
--> statement-breakpoint
ALTER TABLE "bank_feed_connections" ADD CONSTRAINT "bank_feed_connections_item_key" UNIQUE ("organization_id", "provider", "item_id");
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_subscription_sequence_key";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_sequence_key" UNIQUE ("firm_id", "subscription_id", "sequence");
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_subscription_event_key";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_event_key" UNIQUE ("firm_id", "subscription_id", "event_id");
--> statement-breakpoint
DROP INDEX "bank_accounts_feed_account_key";
--> statement-breakpoint
CREATE UNIQUE INDEX "bank_accounts_feed_account_key" ON "bank_accounts" ("organization_id", "feed_connection_id", "feed_account_id") WHERE "feed_connection_id" IS NOT NULL;
--> statement-breakpoint
DROP INDEX "bank_transactions_external_key";
--> statement-breakpoint
CREATE UNIQUE INDEX "bank_transactions_external_key" ON "bank_transactions" ("organization_id", "bank_account_id", "external_id") WHERE "external_id" IS NOT NULL;
--> statement-breakpoint
DROP INDEX "reconciliations_one_open_key";
--> statement-breakpoint
CREATE UNIQUE INDEX "reconciliations_one_open_key" ON "reconciliations" ("organization_id", "bank_account_id") WHERE "status" = 'open';
--> statement-breakpoint
-- A firm's idempotency key (one that creates an organization) is looked up by firm and key; its writers take the
-- key's advisory lock, which keeps it to one record.
DROP INDEX "idempotency_keys_firm_key";
--> statement-breakpoint
CREATE INDEX "idempotency_keys_firm_key_idx" ON "idempotency_keys" ("firm_id", "key") WHERE "route" = 'firm';
--> statement-breakpoint
-- The runs' unique key now leads with organization_id and serves what this index did.
DROP INDEX "scheduled_entry_runs_schedule_idx";
--> statement-breakpoint
-- An aggregator's webhook names its item: the connections of the item are found by it, in any organization.
CREATE INDEX "bank_feed_connections_item_idx" ON "bank_feed_connections" ("provider", "item_id");
--> statement-breakpoint
-- The composite foreign keys, as they were, now backed by the primary keys.
ALTER TABLE account_daily_balances ADD CONSTRAINT account_daily_balances_account_fk FOREIGN KEY (organization_id, account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE account_monthly_balances ADD CONSTRAINT account_monthly_balances_account_fk FOREIGN KEY (organization_id, account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE account_yearly_balances ADD CONSTRAINT account_yearly_balances_account_fk FOREIGN KEY (organization_id, account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_accounts ADD CONSTRAINT bank_accounts_account_fk FOREIGN KEY (organization_id, account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_accounts ADD CONSTRAINT bank_accounts_feed_connection_fk FOREIGN KEY (organization_id, feed_connection_id) REFERENCES bank_feed_connections(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transaction_lines ADD CONSTRAINT bank_transaction_lines_account_fk FOREIGN KEY (organization_id, account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transaction_lines ADD CONSTRAINT bank_transaction_lines_document_fk FOREIGN KEY (organization_id, document_id) REFERENCES documents(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transaction_lines ADD CONSTRAINT bank_transaction_lines_payment_fk FOREIGN KEY (organization_id, payment_id) REFERENCES documents(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transaction_lines ADD CONSTRAINT bank_transaction_lines_tax_rate_fk FOREIGN KEY (organization_id, tax_rate_id) REFERENCES tax_rates(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transaction_lines ADD CONSTRAINT bank_transaction_lines_transaction_fk FOREIGN KEY (organization_id, bank_transaction_id) REFERENCES bank_transactions(organization_id, id) ON DELETE CASCADE;
--> statement-breakpoint
ALTER TABLE bank_transactions ADD CONSTRAINT bank_transactions_bank_account_fk FOREIGN KEY (organization_id, bank_account_id) REFERENCES bank_accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transactions ADD CONSTRAINT bank_transactions_contact_fk FOREIGN KEY (organization_id, contact_id) REFERENCES contacts(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transactions ADD CONSTRAINT bank_transactions_journal_entry_fk FOREIGN KEY (organization_id, journal_entry_id) REFERENCES journal_entries(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transactions ADD CONSTRAINT bank_transactions_reconciliation_fk FOREIGN KEY (organization_id, reconciliation_id) REFERENCES reconciliations(organization_id, id);
--> statement-breakpoint
ALTER TABLE bank_transactions ADD CONSTRAINT bank_transactions_tax_rate_fk FOREIGN KEY (organization_id, tax_rate_id) REFERENCES tax_rates(organization_id, id);
--> statement-breakpoint
ALTER TABLE document_allocations ADD CONSTRAINT document_allocations_payment_fk FOREIGN KEY (organization_id, payment_id) REFERENCES documents(organization_id, id);
--> statement-breakpoint
ALTER TABLE document_allocations ADD CONSTRAINT document_allocations_target_fk FOREIGN KEY (organization_id, target_id) REFERENCES documents(organization_id, id);
--> statement-breakpoint
ALTER TABLE document_lines ADD CONSTRAINT document_lines_account_fk FOREIGN KEY (organization_id, account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE document_lines ADD CONSTRAINT document_lines_document_fk FOREIGN KEY (organization_id, document_id) REFERENCES documents(organization_id, id);
--> statement-breakpoint
ALTER TABLE document_lines ADD CONSTRAINT document_lines_item_fk FOREIGN KEY (organization_id, item_id) REFERENCES items(organization_id, id);
--> statement-breakpoint
ALTER TABLE document_lines ADD CONSTRAINT document_lines_tax_rate_fk FOREIGN KEY (organization_id, tax_rate_id) REFERENCES tax_rates(organization_id, id);
--> statement-breakpoint
ALTER TABLE documents ADD CONSTRAINT documents_bank_account_fk FOREIGN KEY (organization_id, bank_account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE documents ADD CONSTRAINT documents_contact_fk FOREIGN KEY (organization_id, contact_id) REFERENCES contacts(organization_id, id);
--> statement-breakpoint
ALTER TABLE documents ADD CONSTRAINT documents_control_account_fk FOREIGN KEY (organization_id, control_account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE documents ADD CONSTRAINT documents_estimate_fk FOREIGN KEY (organization_id, estimate_id) REFERENCES documents(organization_id, id);
--> statement-breakpoint
ALTER TABLE documents ADD CONSTRAINT documents_invoice_fk FOREIGN KEY (organization_id, invoice_id) REFERENCES documents(organization_id, id);
--> statement-breakpoint
ALTER TABLE documents ADD CONSTRAINT documents_journal_entry_fk FOREIGN KEY (organization_id, journal_entry_id) REFERENCES journal_entries(organization_id, id);
--> statement-breakpoint
ALTER TABLE import_row_errors ADD CONSTRAINT import_row_errors_import_fk FOREIGN KEY (organization_id, import_id) REFERENCES imports(organization_id, id) ON DELETE CASCADE;
--> statement-breakpoint
ALTER TABLE import_rows ADD CONSTRAINT import_rows_import_fk FOREIGN KEY (organization_id, import_id) REFERENCES imports(organization_id, id) ON DELETE CASCADE;
--> statement-breakpoint
ALTER TABLE items ADD CONSTRAINT items_expense_account_fk FOREIGN KEY (organization_id, expense_account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE items ADD CONSTRAINT items_income_account_fk FOREIGN KEY (organization_id, income_account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE journal_entries ADD CONSTRAINT journal_entries_import_fk FOREIGN KEY (organization_id, import_id) REFERENCES imports(organization_id, id);
--> statement-breakpoint
ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_account_fk FOREIGN KEY (organization_id, account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_entry_fk FOREIGN KEY (organization_id, entry_id) REFERENCES journal_entries(organization_id, id);
--> statement-breakpoint
ALTER TABLE reconciliations ADD CONSTRAINT reconciliations_adjustment_entry_fk FOREIGN KEY (organization_id, adjustment_entry_id) REFERENCES journal_entries(organization_id, id);
--> statement-breakpoint
ALTER TABLE reconciliations ADD CONSTRAINT reconciliations_bank_account_fk FOREIGN KEY (organization_id, bank_account_id) REFERENCES bank_accounts(organization_id, id);
--> statement-breakpoint
ALTER TABLE scheduled_entry_runs ADD CONSTRAINT scheduled_entry_runs_schedule_fk FOREIGN KEY (organization_id, schedule_id) REFERENCES scheduled_journal_entries(organization_id, id);
--> statement-breakpoint
ALTER TABLE tax_rates ADD CONSTRAINT tax_rates_liability_account_fk FOREIGN KEY (organization_id, liability_account_id) REFERENCES accounts(organization_id, id);
--> statement-breakpoint
-- The foreign keys that named a parent by id alone now name it with the tenant.
ALTER TABLE "close_signoffs" ADD CONSTRAINT "close_signoffs_close_fk" FOREIGN KEY ("organization_id", "close_id") REFERENCES "closes"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "close_comments" ADD CONSTRAINT "close_comments_close_fk" FOREIGN KEY ("organization_id", "close_id") REFERENCES "closes"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "close_evidence" ADD CONSTRAINT "close_evidence_close_fk" FOREIGN KEY ("organization_id", "close_id") REFERENCES "closes"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "scheduled_entry_runs" ADD CONSTRAINT "scheduled_entry_runs_entry_fk" FOREIGN KEY ("organization_id", "journal_entry_id") REFERENCES "journal_entries"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_fk" FOREIGN KEY ("firm_id", "subscription_id") REFERENCES "webhook_subscriptions"("firm_id", "id") ON DELETE CASCADE;
--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_delivery_fk" FOREIGN KEY ("firm_id", "delivery_id") REFERENCES "webhook_deliveries"("firm_id", "id") ON DELETE CASCADE;
--> statement-breakpoint
-- Background workers claim these rows by id across tenants: a plain index on id keeps those claims fast.
CREATE INDEX "bank_feed_connections_id_idx" ON "bank_feed_connections" ("id");
--> statement-breakpoint
CREATE INDEX "scheduled_journal_entries_id_idx" ON "scheduled_journal_entries" ("id");
--> statement-breakpoint
CREATE INDEX "imports_id_idx" ON "imports" ("id");
--> statement-breakpoint
CREATE INDEX "agent_proposals_id_idx" ON "agent_proposals" ("id");
--> statement-breakpoint
CREATE INDEX "webhook_subscriptions_id_idx" ON "webhook_subscriptions" ("id");
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_id_idx" ON "webhook_deliveries" ("id");
--> statement-breakpoint
ALTER TABLE "attachment_links" ADD CONSTRAINT "attachment_links_entry_fk" FOREIGN KEY ("organization_id", "journal_entry_id") REFERENCES "journal_entries"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "attachment_links" ADD CONSTRAINT "attachment_links_document_fk" FOREIGN KEY ("organization_id", "document_id") REFERENCES "documents"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "attachment_links" ADD CONSTRAINT "attachment_links_contact_fk" FOREIGN KEY ("organization_id", "contact_id") REFERENCES "contacts"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "attachment_links" ADD CONSTRAINT "attachment_links_bank_transaction_fk" FOREIGN KEY ("organization_id", "bank_transaction_id") REFERENCES "bank_transactions"("organization_id", "id");
--> statement-breakpoint
ALTER TABLE "attachment_links" ADD CONSTRAINT "attachment_links_reconciliation_fk" FOREIGN KEY ("organization_id", "reconciliation_id") REFERENCES "reconciliations"("organization_id", "id");
