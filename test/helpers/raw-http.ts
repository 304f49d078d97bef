import { connect } from 'node:net'
import type { Test } from 'tap'
import type { CallResult } from './app.js'
import { testKey } from './app.js'
import { contractViolations } from './contract.js'

/**
 * Sends a request as raw bytes over a connection of its own to the server at `port`, with the
 * test key, `Host` and `Connection: close`: each of `fields` as written (a tab in a value stays a
 * tab, a Transfer-Encoding frames `body` as the test wrote it). Its answer, checked against the
 * contract as call() checks one: its status and JSON body.
 */
export function rawExchange(t: Test, port: number, method: string, url: string, fields: string[], body = ''): Promise<Pick<CallResult, 'status' | 'json'>> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
    socket.on('error', reject).on('end', () => {
      const [head, text = ''] = answer.split('\r\n\r\n')
      const [statusLine, ...lines] = head!.split('\r\n')
      const status = Number(statusLine!.split(' ')[1])
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
      t.strictSame(contractViolations({ method, url, status, headers, body: text }), [], `${method} ${url} ${status} keeps the contract`)
      resolve({ status, json: text === '' ? undefined : JSON.parse(text) })
    })
    socket.end([`${method} ${url} HTTP/1.1`, 'Host: x', `Authorization: Bearer ${testKey}`, 'Connection: close', ...fields, '', body].join('\r\n'))
  })
}
