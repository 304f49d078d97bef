/**
 * Keyset pagination in id order (openapi.yaml: Pagination). A list is asked for one item more
 * than `limit`: when it comes, the page is cut to `limit` and `Link` names the next page, which
 * starts after the last id shown, with the same filter.
 */
export function pageOf<Item extends { id: number }>(
  items: Item[],
  { url, limit, status }: { url: string; limit: number; status?: string | undefined },
): { page: Item[]; link?: string } {
  if (items.length <= limit) return { page: items }
  const page = items.slice(0, limit)
  const next = new URLSearchParams({ limit: String(limit), ...(status && { status }), after: String(page.at(-1)!.id) })
  return { page, link: `<${url}?${next}>; rel="next"` }
}
