module github.com/pickergpu/picker

go 1.26
