module github.com/barometer-scaler/barometer

go 1.26

require github.com/alexliesenfeld/health v0.8.0 // indirect
