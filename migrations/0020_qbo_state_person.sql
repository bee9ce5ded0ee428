-- Every QuickBooks authorization under way belongs to a person: the callback finishes a state only in the browser
-- session of the user who began it, so a state without a user (once made by operator keys and the CLI) could be
-- finished by any browser, with any company. The rule lives here too so that no code path can make such a state
-- again. States without a user are dropped: they lived 15 minutes, and none may be finished any more.
DELETE FROM "qbo_oauth_states" WHERE "user_id" IS NULL;
--> statement-breakpoint
ALTER TABLE "qbo_oauth_states" ALTER COLUMN "user_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "qbo_oauth_states" ADD CONSTRAINT "qbo_oauth_states_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;
