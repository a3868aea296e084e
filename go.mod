module github.com/backwave/backwave

go 1.26.8
