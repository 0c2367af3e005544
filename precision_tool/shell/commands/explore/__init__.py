"""`explore`: the newest comparison's graphs in Model Explorer (an optional extra), served from this
machine with nothing fetched from elsewhere."""
