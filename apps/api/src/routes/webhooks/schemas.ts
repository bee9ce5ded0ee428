import { EVENT_TYPES, SUBSCRIBABLE_EVENT_TYPES } from '@firm/core';
import { Type } from 'typebox';
import { DataOf, ListQuery, PageOf, Timestamp, Uuid } from '../../schemas';

export const EventTypeName = Type.Enum(Object.keys(EVENT_TYPES), { description: 'An event type of the catalogue.' });

export const SubscribedEventType = Type.Enum(['*', ...SUBSCRIBABLE_EVENT_TYPES], {
  description: `An event type, or * for every type (including ones added later): ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}.`,
});

const EventTypes = Type.Array(SubscribedEventType, { minItems: 1, maxItems: 100 });

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'An https URL whose host resolves only to public addresses; no credentials, IP literals in dotted-decimal form only.',
});

const OrganizationIds = Type.Union([Type.Array(Uuid(), { minItems: 1, maxItems: 1000 }), Type.Null()], {
  description: 'The organizations whose events are sent; null for every organization of the firm.',
});

const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);

export const Subscription = Type.Object(
  {
    id: Uuid(),
    url: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    eventTypes: Type.Array(SubscribedEventType),
    organizationIds: Type.Union([Type.Array(Uuid()), Type.Null()], {
      description: 'Null: every organization of the firm.',
    }),
    enabled: Type.Boolean(),
    disabledReason: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the subscription is disabled: by its owner, after failing for 3 days, or on 410 Gone.',
    }),
    disabledAt: Type.Union([Timestamp(), Type.Null()]),
    previousSecretExpiresAt: Type.Union([Timestamp(), Type.Null()], {
      description: 'Until when the secret replaced by the latest rotation still signs, alongside the current one.',
    }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'WebhookSubscription' },
);

export const SubscriptionWithSecret = Type.Object(
  {
    ...Subscription.properties,
    secret: Type.String({
      description: 'The signing secret (whsec_...). Shown only now: store it to verify deliveries.',
    }),
  },
  { title: 'WebhookSubscriptionWithSecret' },
);

export const Delivery = Type.Object(
  {
    id: Uuid(),
    subscriptionId: Uuid(),
    eventId: Uuid('The envelope id and the webhook-id header; the same on every attempt.'),
    eventType: EventTypeName,
    organizationId: Type.Union([Uuid(), Type.Null()]),
    sequence: Type.Integer({ minimum: 1, description: 'Per subscription, one more for each event sent.' }),
    status: Type.Enum(['pending', 'succeeded', 'failed']),
    attemptCount: Type.Integer({ minimum: 0 }),
    nextAttemptAt: Type.Union([Timestamp(), Type.Null()]),
    lastAttemptedAt: Type.Union([Timestamp(), Type.Null()]),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
    lastLatencyMs: Type.Union([Type.Integer(), Type.Null()]),
    lastResponseBody: Type.Union([Type.String(), Type.Null()], { description: 'The first 1 KB of the response.' }),
    lastError: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the last attempt got no HTTP answer: timeout, connection error, refused address.',
    }),
    completedAt: Type.Union([Timestamp(), Type.Null()]),
    createdAt: Timestamp(),
  },
  { title: 'WebhookDelivery' },
);

export const DeliveryAttempt = Type.Object(
  {
    attemptNumber: Type.Integer({
      minimum: 1,
      description: 'Counted from 1 since the delivery was queued or redelivered.',
    }),
    attemptedAt: Timestamp(),
    outcome: Type.Enum(['succeeded', 'retrying', 'failed', 'gone'], {
      description:
        'retrying: another attempt is scheduled; failed: none is left; gone: 410, the subscription was disabled.',
    }),
    statusCode: Type.Union([Type.Integer(), Type.Null()]),
    latencyMs: Type.Integer({ minimum: 0 }),
    responseBody: Type.Union([Type.String(), Type.Null()], { description: 'The first 1 KB of the response.' }),
    error: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'WebhookDeliveryAttempt' },
);

export const DeliveryDetail = Type.Object(
  { ...Delivery.properties, attempts: Type.Array(DeliveryAttempt) },
  { title: 'WebhookDeliveryDetail' },
);

export const EventTypeInfo = Type.Object(
  {
    type: EventTypeName,
    description: Type.String(),
    subscribable: Type.Boolean({ description: 'False for webhook.test, which is sent only on request.' }),
  },
  { title: 'WebhookEventType' },
);

export const WebhookParams = Type.Object({ id: Uuid('Webhook subscription id.') });
export const DeliveryParams = Type.Object({ id: Uuid('Webhook subscription id.'), deliveryId: Uuid('Delivery id.') });

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    eventTypes: EventTypes,
    organizationIds: Type.Optional(OrganizationIds),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    eventTypes: Type.Optional(EventTypes),
    organizationIds: Type.Optional(OrganizationIds),
    description: Type.Optional(Description),
    enabled: Type.Optional(
      Type.Boolean({ description: 'true re-enables a disabled subscription and clears its disabledReason.' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const WebhookListQuery = Type.Object({ ...ListQuery });

export const DeliveryListQuery = Type.Object({
  ...ListQuery,
  status: Type.Optional(Type.Enum(['pending', 'succeeded', 'failed'])),
  eventType: Type.Optional(EventTypeName),
  since: Type.Optional(Timestamp()),
  until: Type.Optional(Timestamp()),
});

export const SubscriptionOne = DataOf(Subscription);
export const SubscriptionWithSecretOne = DataOf(SubscriptionWithSecret);
export const SubscriptionList = PageOf(Subscription);
export const DeliveryOne = DataOf(Delivery);
export const DeliveryList = PageOf(Delivery);
export const DeliveryDetailOne = DataOf(DeliveryDetail);
export const EventTypeList = Type.Object({ data: Type.Array(EventTypeInfo) });
