module benchlab/go-nethttp

// 1.19: Debian bookworm's golang-go builds it too; the standard library only.
go 1.19
