"""What every other package uses: the user's errors (`errors`), files written whole or not at
all (`files`), the cache folder (`cache`), progress bars (`progress`) and the named stages of a
run that turn a failure inside TensorFlow into one line saying what zoo was doing (`stages`).
Imports nothing of zoo."""
