"""The model: TF Hub handles and loading (`hub`), the task heads (`heads`, also importable as
`zoo.heads`) and the core models that put a head on an encoder, with the packer that turns raw
text into encoder inputs (`cores`, also importable as `zoo.models`)."""
