/**
 * Keyset pagination in id order (openapi.yaml: Pagination). A list is asked for one item more
 * than `limit`: when it comes, the list is cut to `limit` and `Link` names the next page, which
 * starts after the last id shown, with the same filter.
 */
export function pageOf<Item extends { id: number }>(
  items: Item[],
  { url, limit, status }: { url: string; limit: number; status?: string | undefined },
): { page: Item[]; link?: string } {
  if (items.length <= limit) return { page: items }
  items.length = limit
  const filter = status === undefined ? '' : `&status=${encodeURIComponent(status)}`
  return { page: items, link: `<${url}?limit=${limit}${filter}&after=${items[limit - 1]!.id}>; rel="next"` }
}
