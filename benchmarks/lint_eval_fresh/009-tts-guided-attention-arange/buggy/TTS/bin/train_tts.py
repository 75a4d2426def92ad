import torch

from TTS.tts.layers.losses import TacotronLoss

use_cuda = torch.cuda.is_available()


def train_step(data, model, criterion, optimizer):
    text_input, text_lengths, mel_input, mel_lengths = data
    # dispatch data to GPU
    if use_cuda:
        text_input = text_input.cuda(non_blocking=True)
        text_lengths = text_lengths.cuda(non_blocking=True)
        mel_input = mel_input.cuda(non_blocking=True)
        mel_lengths = mel_lengths.cuda(non_blocking=True)

    decoder_output, postnet_output, alignments, stop_tokens = model(
        text_input, text_lengths, mel_input, mel_lengths)

    # set the [alignment] lengths wrt reduction factor for guided attention
    if mel_lengths.max() % model.decoder.r != 0:
        alignment_lengths = (mel_lengths + (model.decoder.r - (mel_lengths.max() % model.decoder.r))) // model.decoder.r
    else:
        alignment_lengths = mel_lengths // model.decoder.r

    # compute loss
    loss_dict = criterion(decoder_output, mel_input, alignments, alignment_lengths, text_lengths)
    optimizer.zero_grad()
    loss_dict['loss'].backward()
    optimizer.step()
    return loss_dict


def main(c, model, optimizer):
    criterion = TacotronLoss(c, ga_sigma=0.4)
    if use_cuda:
        model.cuda()
        criterion.cuda()
    return criterion
