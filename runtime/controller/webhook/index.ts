/** The controller's admission webhooks: what main.ts needs. */
export { startWebhookServer, resolveWebhookMode, parseUrlBase, DEFAULT_WEBHOOK_CERT_DIR } from './start';
export type { WebhookServerOptions, WebhookServerHandle, WebhookMode, WebhookCertificateSource } from './start';
export { informerWebhookCaches, liveLister, liveWebhookCaches, type WebhookCacheSet } from './listers';
export type { WebhookCaches, Lister } from './views';
