package xa

import "sort"

func sortBranches(bs []Branch) {
	sort.Slice(bs, func(i, j int) bool {
		if !bs[i].PreparedAt.Equal(bs[j].PreparedAt) {
			return bs[i].PreparedAt.Before(bs[j].PreparedAt)
		}
		return bs[i].XID.String() < bs[j].XID.String()
	})
}
