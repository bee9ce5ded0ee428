export { getDelivery, listDeliveries, redeliver, sendTestEvent } from './deliveries';
export type { Delivery, DeliveryAttempt } from './deliveries';
export { RETRY_DELAYS_SECONDS } from './schedule';
export { DEVELOPMENT_SECRET_KEYS, parseSecretKeys } from './secrets';
export type { SecretKeys } from './secrets';
export {
  createSubscription,
  deleteSubscription,
  getSubscription,
  listSubscriptions,
  rotateSecret,
  updateSubscription,
} from './subscriptions';
export type { Subscription, WebhookDeps, WebhookOwner } from './subscriptions';
export { claimDeliveries, createWebhookWorker, dispatchOutbox, outboxLagSeconds } from './worker';
export type { AttemptOutcome, Envelope, WebhookWorker } from './worker';
