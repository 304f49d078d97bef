import type { TraceApi } from '../ops/tracing.js'
import type { Claimed } from './deliveries.js'
import type { AttemptAnswer } from './outcome.js'

/** An attempt's span, begun: the headers that carry its trace to the receiver, and its end. */
export interface AttemptSpan {
  headers: Record<string, string>
  end(answer: AttemptAnswer): void
}

/** The port of a URL that names none, by its scheme (a target is http or https: target.ts). */
const defaultPorts: Record<string, number> = { 'http:': 80, 'https:': 443 }

/** Tracing on: begins the span of an attempt to deliver `claimed`, its event's id `eventId`. */
export type AttemptTracer = (claimed: Claimed, eventId: string) => AttemptSpan

/**
 * Each attempt a client span in the trace of the request whose change recorded the event (its
 * traceparent, kept with the event): a child of that request's span, however long after it the
 * attempt is made, so that the request, its event and every attempt to deliver it read as one
 * trace. Named `deliver {event type}`; it carries the receiver's host and port (never its path
 * or query, which may hold a credential), the event, the delivery and the attempt's number, and
 * the answer's status, or why there was none (`error.type`). Its W3C `traceparent` goes with the
 * request, beside the Standard Webhooks headers, so that a receiver that traces continues it. An
 * event recorded while tracing was off begins a trace of its own.
 */
export function attemptSpans(api: TraceApi): AttemptTracer {
  return (claimed, eventId) => {
    const url = new URL(claimed.url)
    const parent = api.continued(claimed.event.traceParent)
    const span = api.tracer.startSpan(
      `deliver ${claimed.event.type}`,
      {
        kind: api.kinds.client,
        attributes: {
          'http.request.method': 'POST',
          'url.scheme': url.protocol.slice(0, -1),
          'server.address': url.hostname,
          'server.port': Number(url.port) || defaultPorts[url.protocol]!,
          'webhook.event.type': claimed.event.type,
          'webhook.event.id': eventId,
          'webhook.delivery.id': claimed.deliveryId,
          'webhook.subscription.id': claimed.subscriptionId,
          'webhook.attempt': claimed.attempts + 1,
        },
      },
      parent,
    )
    return {
      headers: api.inject(api.withSpan(parent, span)),
      end(answer) {
        if ('status' in answer) {
          span.setAttribute('http.response.status_code', answer.status)
          if (answer.status >= 400) span.setAttribute('error.type', String(answer.status))
        } else span.setAttribute('error.type', answer.error)
        if (!('status' in answer) || answer.status >= 400) span.setStatus({ code: api.errorStatus })
        span.end()
      },
    }
  }
}
