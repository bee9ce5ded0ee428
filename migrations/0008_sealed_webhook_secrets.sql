-- Webhook signing secrets are sealed at rest (AES-256-GCM under WEBHOOK_SECRET_KEYS, bound to their subscription):
-- `sealed:v1:<key id>:<base64>`. Rows written before hold `whsec_…` in clear until the worker's first round seals
-- them, so both forms are allowed; nothing else is.
ALTER TABLE "webhook_subscriptions" DROP CONSTRAINT "webhook_subscriptions_secret_format";--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_secret_format"
  CHECK ("secret" like 'whsec\_%' or "secret" like 'sealed:v1:%');--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_previous_secret_format"
  CHECK ("previous_secret" is null or "previous_secret" like 'whsec\_%' or "previous_secret" like 'sealed:v1:%');
